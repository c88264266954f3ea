"""What every page and JSON view shares: the login rule, error answers, parameters.

Each page is built by one function returning plain data (its JSON twin's body); the page
view (``pages.page``) renders it, the API view (``api_view``) returns it. A JSON action
(``action_view``) is a POST that changes something. Errors are raised as ``NotFound`` /
``BadParameter`` / ``Conflict`` and answered as 404 / 400 / 409 JSON by the API and as
an error page by the page: never a 500 for a bad URL.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, Concatenate, ParamSpec

import redis
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt

from lockstep.workers.errors import UnknownTopicError
from lockstep.workers.inspect import get_topic, groups_of

P = ParamSpec("P")
Build = Callable[Concatenate[HttpRequest, P], dict[str, Any]]


class NotFound(LookupError):
    """No such topic, queue, group or message."""


class BadParameter(ValueError):
    """A query or path parameter that cannot be used as given."""


class BadParameters(BadParameter):
    """Several parameters that cannot be used as given: ``problems`` names each field
    with its errors; the message names them all (the API adds ``problems``)."""

    def __init__(self, problems: dict[str, list[str]]) -> None:
        super().__init__(
            "; ".join(f"{name}: {' '.join(errors)}" for name, errors in problems.items())
        )
        self.problems = problems


class Conflict(BadParameter):
    """A request that clashes with what is there already (the API answers 409)."""


class InvalidForm(Exception):
    """A page's form filled in with values that cannot be used: ``data`` is the page to
    show again, with what was typed and each field's error, answered 400."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__("invalid form")
        self.data = data


def api_view(build: Build[P]) -> Callable[Concatenate[HttpRequest, P], JsonResponse]:
    """The JSON twin of a page: 401 JSON when anonymous, 404 / 400 JSON on errors."""

    @wraps(build)
    def view(request: HttpRequest, *args: P.args, **kwargs: P.kwargs) -> JsonResponse:
        if not request.user.is_authenticated:
            return JsonResponse({"error": "authentication required"}, status=401)
        try:
            return JsonResponse(build(request, *args, **kwargs))
        except (NotFound, UnknownTopicError) as exc:
            return JsonResponse({"error": str(exc)}, status=404)
        except BadParameters as exc:
            return JsonResponse({"error": str(exc), "problems": exc.problems}, status=400)
        except BadParameter as exc:
            return JsonResponse({"error": str(exc)}, status=400)

    return view


def action_view(
    view: Callable[Concatenate[HttpRequest, P], JsonResponse],
) -> Callable[Concatenate[HttpRequest, P], JsonResponse]:
    """A POST-only JSON action: login (401), then Django's CSRF check (403, the reason
    said), then the view; its ``PermissionDenied`` is 403, ``NotFound`` 404, ``Conflict``
    409, ``BadParameter`` 400 and an unreachable Redis 503, all as JSON."""

    @csrf_exempt  # checked below, after the login check: an anonymous caller learns to log in
    @wraps(view)
    def endpoint(request: HttpRequest, *args: P.args, **kwargs: P.kwargs) -> JsonResponse:
        if request.method != "POST":
            return _json_error(405, "use POST")
        if not request.user.is_authenticated:
            return _json_error(401, "authentication required")
        reason = _csrf_failure(request)
        if reason:
            return _json_error(403, f"CSRF check failed: {reason}")
        try:
            return view(request, *args, **kwargs)
        except PermissionDenied as exc:
            return _json_error(403, str(exc) or "permission denied")
        except NotFound as exc:
            return _json_error(404, str(exc))
        except Conflict as exc:
            return _json_error(409, str(exc))
        except BadParameter as exc:
            return _json_error(400, str(exc))
        except redis.RedisError as exc:
            return _json_error(503, f"Redis is unavailable: {exc}")

    return endpoint


def _json_error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


class _Csrf(CsrfViewMiddleware):
    def _reject(self, request: HttpRequest, reason: str) -> Any:
        return reason  # the reason instead of Django's HTML failure page


def _unused(request: HttpRequest) -> HttpResponse:
    return HttpResponse()  # the check never calls on: it only answers yes or no


def _csrf_failure(request: HttpRequest) -> str | None:
    """Django's CSRF check as the middleware makes it; the reason when it fails."""
    check = _Csrf(_unused)
    check.process_request(request)
    reason = check.process_view(request, _unused, (), {})
    return str(reason) if reason else None


# ---- parameters ------------------------------------------------------------------------


MAX_INT = 2**63 - 1


def int_param(
    value: str | None,
    name: str,
    *,
    default: int | None = None,
    minimum: int = 0,
    maximum: int | None = None,
) -> int | None:
    """``value`` as an int within bounds; ``default`` when absent or empty. No value is
    above ``MAX_INT`` (Redis integers and stream IDs stop there: a larger one would reach
    Redis as an invalid argument)."""
    if value is None or value.strip() == "":
        return default
    try:
        number = int(value.strip())
    except ValueError:
        raise BadParameter(f"{name} must be a whole number, got {value!r}") from None
    if number < minimum or (maximum is not None and number > maximum):
        bounds = f"{minimum}..{maximum}" if maximum is not None else f">= {minimum}"
        raise BadParameter(f"{name} must be {bounds}, got {number}")
    if number > MAX_INT:
        raise BadParameter(f"{name} must be at most {MAX_INT}, got {number}")
    return number


def text_param(value: str | None, name: str, *, max_length: int = 256) -> str:
    text = (value or "").strip()
    if len(text) > max_length:
        raise BadParameter(f"{name} is longer than {max_length} characters")
    refuse_nul(text, name)
    return text


def refuse_nul(text: str, name: str) -> None:
    """``BadParameter`` for a NUL character: no name or key the pages look up has one,
    and PostgreSQL refuses to compare text with one (an error, not "not found")."""
    if "\x00" in text:
        raise BadParameter(f"{name} must not contain NUL characters")


def topic_queue_count(client: Any, topic: str) -> int:
    """The topic's queue count; ``NotFound`` for a topic that was never created."""
    try:
        return get_topic(client, topic).queues
    except UnknownTopicError:
        raise NotFound(f"no topic {topic!r}") from None


def queue_param(client: Any, topic: str, value: str) -> int:
    """A queue number of ``topic`` from the URL: 400 when not a number, 404 when the topic
    has no such queue."""
    count = topic_queue_count(client, topic)
    queue = int_param(value, "queue")
    if queue is None:
        raise BadParameter("queue is required")
    if queue >= count:
        raise NotFound(f"topic {topic!r} has no queue {queue} (0..{count - 1})")
    return queue


def require_group(client: Any, topic: str, group: str) -> None:
    topic_queue_count(client, topic)
    if group not in groups_of(client, topic):
        raise NotFound(f"no consumer group {group!r} on topic {topic!r}")
