"""The dead-letter actions' JSON API: dry run and submit, a request's status, cancel, and
the audit log.

Every POST needs a session (401 JSON without one), a valid CSRF token in the
``X-CSRFToken`` header (403 JSON without it; checked after the login, so an anonymous
caller learns it must log in) and the permission of its action
(``deadletters.replay_deadletter`` / ``discard_deadletter``; 403 JSON, and nothing is
read or changed). Bad input is 400, an unknown group or request 404, a request id reused
for another action or group 409, Redis unreachable 503: never a 500.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from typing import Any, Concatenate, ParamSpec

import redis
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, PermissionsMixin
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt

from lockstep.dashboard.deadletters import actions, progress
from lockstep.dashboard.deadletters.models import ActionKind, ActionRequest, AuditEntry
from lockstep.dashboard.deadletters.plans import ActionRefused, Selection, plan
from lockstep.dashboard.deadletters.roles import DISCARD, REPLAY
from lockstep.dashboard.deadletters.views import require_known_group
from lockstep.dashboard.monitor.redis_conn import get_redis
from lockstep.dashboard.monitor.views.common import (
    MAX_INT,
    BadParameter,
    NotFound,
    api_view,
    int_param,
    text_param,
)

P = ParamSpec("P")
PERMISSION = {ActionKind.REPLAY: REPLAY, ActionKind.DISCARD: DISCARD}
AUDIT_LIMIT, AUDIT_MAX_LIMIT = 100, 500
BODY_FIELDS = {"action", "request_id", "ids", "filter", "reason", "dry_run"}


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


def action_endpoint(
    view: Callable[Concatenate[HttpRequest, P], JsonResponse],
) -> Callable[Concatenate[HttpRequest, P], JsonResponse]:
    """A POST-only JSON endpoint: login, then CSRF, then the view; errors as JSON."""

    @csrf_exempt  # checked below, after the login check
    @wraps(view)
    def endpoint(request: HttpRequest, *args: P.args, **kwargs: P.kwargs) -> JsonResponse:
        if request.method != "POST":
            return _error(405, "use POST")
        if not request.user.is_authenticated:
            return _error(401, "authentication required")
        reason = _csrf_failure(request)
        if reason:
            return _error(403, f"CSRF check failed: {reason}")
        try:
            return view(request, *args, **kwargs)
        except PermissionDenied as exc:
            return _error(403, str(exc) or "permission denied")
        except NotFound as exc:
            return _error(404, str(exc))
        except actions.RequestIdReused as exc:
            return _error(409, str(exc))
        except (ActionRefused, BadParameter) as exc:
            return _error(400, str(exc))
        except redis.RedisError as exc:
            return _error(503, f"Redis is unavailable: {exc}")

    return endpoint


def _error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def require_permission(user: AbstractBaseUser | AnonymousUser, action: str) -> None:
    if not _has_perm(user, PERMISSION[ActionKind(action)]):
        raise PermissionDenied(f"you may not {action} dead letters")


def require_any_permission(user: AbstractBaseUser | AnonymousUser) -> None:
    if not any(_has_perm(user, p) for p in PERMISSION.values()):
        raise PermissionDenied("you may not replay or discard dead letters")


def _has_perm(user: AbstractBaseUser | AnonymousUser, permission: str) -> bool:
    return isinstance(user, PermissionsMixin) and user.has_perm(permission)


# ---- POST /api/v1/groups/<group>/dead-letters/actions -----------------------------------


@action_endpoint
def actions_api(request: HttpRequest, group: str) -> JsonResponse:
    """Dry run (200 with the plan) or submit (202 with the request; 200 when the request
    id was submitted before, with that request as it is now)."""
    require_any_permission(request.user)
    body = _json_body(request)
    action = actions.check_action(_text(body, "action"))
    require_permission(request.user, action)
    require_known_group(group)
    selection = _selection(body)
    if _flag(body, "dry_run"):
        return JsonResponse(plan(get_redis(), group, action, selection).as_dict())
    submitted = actions.submit(
        request.user.get_username(),
        group,
        action,
        actions.check_request_id(_text(body, "request_id")),
        selection,
        _text(body, "reason"),
    )
    return JsonResponse(
        progress.request_shape(submitted.request), status=202 if submitted.created else 200
    )


def _json_body(request: HttpRequest) -> dict[str, Any]:
    try:
        data = json.loads(request.body or b"{}")
    except RequestDataTooBig:
        raise BadParameter("the request body is too large") from None
    except (ValueError, UnicodeDecodeError):
        raise BadParameter("the request body must be a JSON object") from None
    if not isinstance(data, dict):
        raise BadParameter("the request body must be a JSON object")
    unknown = sorted(set(data) - BODY_FIELDS)
    if unknown:
        raise BadParameter(f"unknown field {unknown[0][:40]!r} (one of: {sorted(BODY_FIELDS)})")
    return data


def _text(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadParameter(f"{name} must be a string")
    return value


def _flag(body: dict[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if not isinstance(value, bool):
        raise BadParameter(f"{name} must be true or false")
    return value


def _selection(body: dict[str, Any]) -> Selection:
    """``ids`` (record ids) or ``filter`` (the list's filter fields), exactly one."""
    if ("ids" in body) == ("filter" in body):
        raise BadParameter("give either ids (a list of dead-letter ids) or filter (an object)")
    if "ids" in body:
        return Selection.of_ids(_ids(body["ids"]))
    raw = body["filter"]
    if not isinstance(raw, dict):
        raise BadParameter("filter must be an object")
    params = {}
    for name, value in raw.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise BadParameter(f"filter field {str(name)[:40]!r} must be a string or a number")
        params[str(name)] = str(value)
    return Selection.of_filter(params)


def _ids(raw: Any) -> list[int]:
    if not isinstance(raw, list):
        raise BadParameter("ids must be a list of dead-letter ids")
    ids = []
    for value in raw:
        if isinstance(value, str) and value.isascii() and value.isdigit():  # not "²"
            value = int(value)
        # Beyond MAX_INT no record can have the id, and the database refuses to compare.
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_INT:
            raise BadParameter(f"ids must be whole numbers from 1 to {MAX_INT}, got {value!r:.40}")
        ids.append(value)
    return ids


# ---- the request: status and cancel ---------------------------------------------------


def find_request(request_id: str) -> ActionRequest:
    found = None
    if actions.REQUEST_ID.match(request_id):
        found = ActionRequest.objects.filter(request_id=request_id).first()
    if found is None:
        raise NotFound(f"no action request {request_id[:64]!r}")
    return found


def build_request_status(request: HttpRequest, request_id: str) -> dict[str, Any]:
    """GET: the request's shape with its first items, ``created_at``, ``finished_at``."""
    return progress.request_detail(find_request(request_id))


request_api = api_view(build_request_status)


@action_endpoint
def cancel_api(request: HttpRequest, request_id: str) -> JsonResponse:
    """POST: stop the request; 200 with its shape (its final state when it had finished:
    a cancel then changes nothing)."""
    require_any_permission(request.user)
    found = find_request(request_id)
    require_permission(request.user, found.action)
    cancelled = actions.cancel(found.request_id, request.user.get_username()) or found
    return JsonResponse(progress.request_shape(cancelled))


# ---- GET /api/v1/audit -----------------------------------------------------------------


def build_audit(request: HttpRequest) -> dict[str, Any]:
    """``?group=&actor=&action=&limit=&before=&after=`` → ``{"entries": [...], "older",
    "newer"}``, newest first. Keyset pages on (at, id): ``before=<id>`` the entries just
    older than entry ``id``, ``after=<id>`` those just newer; ``older`` / ``newer`` are the
    cursors of the neighbouring pages (``None`` at either end). Entries added meanwhile
    never shift a page."""
    params = request.GET
    limit = (
        int_param(
            params.get("limit"), "limit", default=AUDIT_LIMIT, minimum=1, maximum=AUDIT_MAX_LIMIT
        )
        or AUDIT_LIMIT
    )
    entries = AuditEntry.objects.all()
    for name in ("group", "actor", "action"):
        value = text_param(params.get(name), name, max_length=200)
        if value:
            entries = entries.filter(**{name: value})
    before = _audit_cursor(params.get("before"), "before")
    after = _audit_cursor(params.get("after"), "after") if before is None else None
    if after is not None:
        rows = list(entries.filter(_newer_than(after)).order_by("at", "id")[: limit + 1])
        more_newer, page = len(rows) > limit, rows[:limit][::-1]
        more_older = bool(page)
    else:
        older_only = entries.filter(_older_than(before)) if before is not None else entries
        rows = list(older_only.order_by("-at", "-id")[: limit + 1])
        more_older, page = len(rows) > limit, rows[:limit]
        more_newer = before is not None and bool(page)
    return {
        "entries": [audit_entry(e) for e in page],
        "older": page[-1].pk if page and more_older else None,
        "newer": page[0].pk if page and more_newer else None,
    }


def _audit_cursor(value: str | None, name: str) -> AuditEntry | None:
    pk = int_param(value, name, minimum=1)
    if pk is None:
        return None
    entry = AuditEntry.objects.filter(pk=pk).first()
    if entry is None:
        raise NotFound(f"no audit entry {pk}")
    return entry


def _older_than(entry: AuditEntry) -> Q:
    return Q(at__lt=entry.at) | Q(at=entry.at, id__lt=entry.pk)


def _newer_than(entry: AuditEntry) -> Q:
    return Q(at__gt=entry.at) | Q(at=entry.at, id__gt=entry.pk)


def audit_entry(entry: AuditEntry) -> dict[str, Any]:
    return {
        "id": entry.pk,
        "at": entry.at.isoformat(),
        "actor": entry.actor,
        "action": entry.action,
        "request_id": entry.request_id,
        "group": entry.group,
        "filter": entry.filter,
        "selection": entry.selection,
        "reason": entry.reason,
        "count": entry.count,
        "outcomes": entry.outcomes,
    }


audit_api = api_view(build_audit)
