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

from typing import Any, ParamSpec

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import HttpRequest, JsonResponse
from pydantic import field_validator, model_validator

from lockstep.dashboard.deadletters import actions, progress
from lockstep.dashboard.deadletters.models import ActionKind, ActionRequest, AuditEntry
from lockstep.dashboard.deadletters.plans import Selection, plan
from lockstep.dashboard.deadletters.views import require_known_group
from lockstep.dashboard.web.json_input import JsonBody, parse_body
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.roles import DISCARD, REPLAY, has_perm
from lockstep.dashboard.web.views import (
    MAX_INT,
    NotFound,
    action_view,
    api_view,
    int_param,
    text_param,
)

P = ParamSpec("P")
PERMISSION = {ActionKind.REPLAY: REPLAY, ActionKind.DISCARD: DISCARD}
AUDIT_LIMIT, AUDIT_MAX_LIMIT = 100, 500


def require_permission(user: AbstractBaseUser | AnonymousUser, action: str) -> None:
    if not has_perm(user, PERMISSION[ActionKind(action)]):
        raise PermissionDenied(f"you may not {action} dead letters")


def require_any_permission(user: AbstractBaseUser | AnonymousUser) -> None:
    if not any(has_perm(user, p) for p in PERMISSION.values()):
        raise PermissionDenied("you may not replay or discard dead letters")


# ---- POST /api/v1/groups/<group>/dead-letters/actions -----------------------------------


@action_view
def actions_api(request: HttpRequest, group: str) -> JsonResponse:
    """Dry run (200 with the plan) or submit (202 with the request; 200 when the request
    id was submitted before, with that request as it is now)."""
    require_any_permission(request.user)
    body = parse_body(request, ActionBody)
    action = actions.check_action(body.action or "")
    require_permission(request.user, action)
    require_known_group(group)
    selection = body.selection()
    if body.dry_run:
        return JsonResponse(plan(get_redis(), group, action, selection).as_dict())
    submitted = actions.submit(
        request.user.get_username(),
        group,
        action,
        actions.check_request_id(body.request_id or ""),
        selection,
        body.reason or "",
    )
    return JsonResponse(
        progress.request_shape(submitted.request), status=202 if submitted.created else 200
    )


class ActionBody(JsonBody):
    """``POST .../dead-letters/actions``: ``action``, ``request_id``, ``reason`` (strings),
    ``dry_run`` (true or false), and exactly one of ``ids`` (dead-letter ids, whole
    numbers or digit strings) and ``filter`` (the list's filter fields, strings or
    numbers; null ones are left out)."""

    action: str | None = None
    request_id: str | None = None
    ids: list[int] | None = None
    filter: dict[str, str] | None = None
    reason: str | None = None
    dry_run: bool = False

    @field_validator("ids", mode="before")
    @classmethod
    def _ids(cls, raw: Any) -> Any:
        if raw is None:
            return None
        if not isinstance(raw, list):
            raise ValueError("ids must be a list of dead-letter ids")
        ids = []
        for value in raw:
            if isinstance(value, str) and value.isascii() and value.isdigit():  # not "²"
                value = int(value)
            # Beyond MAX_INT no record can have the id, and the database refuses to compare.
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_INT:
                raise ValueError(
                    f"ids must be whole numbers from 1 to {MAX_INT}, got {value!r:.40}"
                )
            ids.append(value)
        return ids

    @field_validator("filter", mode="before")
    @classmethod
    def _filter(cls, raw: Any) -> Any:
        if raw is None:
            return None
        if not isinstance(raw, dict):
            raise ValueError("filter must be an object")
        params = {}
        for name, value in raw.items():
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise ValueError(f"filter field {str(name)[:40]!r} must be a string or a number")
            params[str(name)] = str(value)
        return params

    @model_validator(mode="after")
    def _one_selection(self) -> ActionBody:
        if (self.ids is None) == (self.filter is None):
            raise ValueError("give either ids (a list of dead-letter ids) or filter (an object)")
        return self

    def selection(self) -> Selection:
        if self.ids is not None:
            return Selection.of_ids(self.ids)
        return Selection.of_filter(self.filter or {})


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


@action_view
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
