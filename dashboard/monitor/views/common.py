"""What every page and JSON view shares: the login rule, error answers, parameters.

Each page is built by one function returning plain data (its JSON twin's body); the page
view renders it, the API view returns it. Errors are raised as ``NotFound`` /
``BadParameter`` and answered as 404 / 400 JSON by the API and as an error page by the
page: never a 500 for a bad URL.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, Concatenate, ParamSpec

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from lockstep.workers.errors import UnknownTopicError
from lockstep.workers.inspect import get_topic, groups_of

P = ParamSpec("P")
Build = Callable[Concatenate[HttpRequest, P], dict[str, Any]]


class NotFound(LookupError):
    """No such topic, queue, group or message."""


class BadParameter(ValueError):
    """A query or path parameter that cannot be used as given."""


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
        except BadParameter as exc:
            return JsonResponse({"error": str(exc)}, status=400)

    return view


def page_view(
    template: str, build: Build[P], **extra: Any
) -> Callable[Concatenate[HttpRequest, P], HttpResponse]:
    """A login-required page rendering ``build``'s data as ``data`` (plus ``extra`` as is);
    errors render the error page with their status."""

    @login_required
    def view(request: HttpRequest, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        try:
            data = build(request, *args, **kwargs)
        except (NotFound, UnknownTopicError) as exc:
            return _error(request, 404, "Not found", str(exc))
        except InvalidForm as exc:
            return render(request, template, {"data": exc.data, **extra}, status=400)
        except BadParameter as exc:
            return _error(request, 400, "Bad request", str(exc))
        return render(request, template, {"data": data, **extra})

    view.__name__ = view.__qualname__ = f"{build.__name__}_page"
    return view


def _error(request: HttpRequest, status: int, title: str, message: str) -> HttpResponse:
    return render(
        request, "monitor/error.html", {"title": title, "message": message}, status=status
    )


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
