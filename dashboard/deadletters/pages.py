"""The dead-letter pages: the groups that have dead letters, a group's list (with the
replay and discard controls for operators), one dead letter, and the audit log.

Each page renders its JSON twin's data (the list and detail builders of ``views.py``; the
groups and audit builders here) plus what only a page needs: links that keep the current
filter, and what the signed-in user may do. The page only hides controls a user could not
use; the actions API checks the permission again on every POST.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, PermissionsMixin
from django.db.models import Count, Q
from django.http import HttpRequest
from django.urls import reverse

from lockstep.dashboard.deadletters import action_views
from lockstep.dashboard.deadletters.models import AuditEntry, DeadLetter, Status
from lockstep.dashboard.deadletters.queries import (
    DEFAULT_LIMIT,
    SORTS,
    Filters,
    InvalidFilters,
    count_waiting,
    to_ms,
)
from lockstep.dashboard.deadletters.views import build_detail, build_list
from lockstep.dashboard.web.pages import page_view
from lockstep.dashboard.web.panels import group_panels
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.roles import DISCARD, REPLAY, may_see_bodies
from lockstep.dashboard.web.views import InvalidForm, api_view, int_param, text_param
from lockstep.workers.inspect import groups_of, list_topics

# The list's filters, as the form, the links and "Replay all matching" carry them.
FILTER_NAMES = ("topic", "queue", "key", "error", "status", "since", "until")
# A hex dump line: 16 bytes, as ``xxd`` and ``hexdump -C`` show them.
HEX_LINE_BYTES = 16


def may_act(user: AbstractBaseUser | AnonymousUser) -> dict[str, bool]:
    """What ``user`` may do on the dead-letter pages (``replay``, ``discard``,
    ``see_bodies``)."""

    def has(permission: str) -> bool:
        return isinstance(user, PermissionsMixin) and user.has_perm(permission)

    return {"replay": has(REPLAY), "discard": has(DISCARD), "see_bodies": may_see_bodies(user)}


# ---- a group's list ----------------------------------------------------------------------


def build_list_page(request: HttpRequest, group: str) -> dict[str, Any]:
    """The list API's answer (``views.build_list``, each item with its ``error_line``)
    plus ``form`` (the filters as given), ``form_errors`` (field → message), ``action_filter``
    (those given, for "Replay all matching"), ``links``, ``may`` and ``panels`` (what other
    apps show on a group's page, ``web.panels``: the demo's billing switch). Filters that
    cannot be used raise ``InvalidForm``: the page again, listing nothing, with what was
    typed and each field's error."""
    try:
        data = build_list(request, group)
    except InvalidFilters as exc:
        nothing: dict[str, Any] = {
            "group": group,
            "items": [],
            "next_cursor": None,
            "count_waiting": count_waiting(group, Filters()),
            "filters": {},
            "sort": SORTS[0],
            "limit": DEFAULT_LIMIT,
        }
        raise InvalidForm(_list_page(request, group, nothing, exc.errors)) from None
    return _list_page(request, group, data, {})


def _list_page(
    request: HttpRequest, group: str, data: dict[str, Any], errors: dict[str, str]
) -> dict[str, Any]:
    form = form_values(request.GET)
    return {
        **data,
        "items": [{**item, "error_line": first_line(item["error"])} for item in data["items"]],
        "form": form,
        "form_errors": errors,
        "action_filter": {} if errors else {name: value for name, value in form.items() if value},
        "links": list_links(request, group, form, data),
        "may": may_act(request.user),
        "panels": group_panels(group),
        "statuses": Status.values,
    }


def first_line(text: str) -> str:
    """The first non-blank line of an error text: what fits in a table cell."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def form_values(params: Mapping[str, str]) -> dict[str, str]:
    """The filters as given (stripped), for the form and for links that keep them."""
    return {name: (params.get(name) or "").strip() for name in FILTER_NAMES}


def list_links(
    request: HttpRequest, group: str, form: dict[str, str], data: dict[str, Any]
) -> dict[str, Any]:
    """Links that keep the filter: the first and next page, the other sort, the export and
    the JSON twin of exactly this page."""
    filters = {name: value for name, value in form.items() if value}
    shown = dict(filters)
    if data["sort"] != SORTS[0]:
        shown["sort"] = data["sort"]
    if data["limit"] != DEFAULT_LIMIT:
        shown["limit"] = str(data["limit"])
    other_sort = SORTS[1] if data["sort"] == SORTS[0] else SORTS[0]
    api = reverse("api-dead-letters", args=[group])
    return {
        "first": _query(shown),
        "next": _query({**shown, "cursor": data["next_cursor"]}) if data["next_cursor"] else None,
        "is_first": not (request.GET.get("cursor") or "").strip(),
        "other_sort": _query({**shown, "sort": other_sort}),
        "export": reverse("api-dead-letters-export", args=[group]) + _query(shown),
        "api": api + ("?" + request.GET.urlencode() if request.GET else ""),
        "actions": reverse("api-dead-letter-actions", args=[group]),
    }


def _query(params: dict[str, str]) -> str:
    return "?" + urlencode(params) if params else "?"


# ---- one dead letter ---------------------------------------------------------------------


def build_detail_page(request: HttpRequest, group: str, record_id: str) -> dict[str, Any]:
    """The detail API's answer (``views.build_detail``) plus ``header_rows`` (name, value
    as text), ``hex_lines`` for a binary body, ``may`` and ``links``."""
    data = build_detail(request, group, record_id)
    return {
        **data,
        "header_rows": header_rows(data["headers"]),
        "hex_lines": hex_lines(data["body"]),
        "may": may_act(request.user),
        "links": {
            "api": reverse("api-dead-letter", args=[group, data["id"]]),
            "actions": reverse("api-dead-letter-actions", args=[group]),
        },
    }


def header_rows(headers: dict[str, Any] | None) -> list[tuple[str, str]]:
    """Headers as (name, value) rows, values that are not strings as JSON. (A template
    cannot iterate a dict safely: a header named ``items`` would shadow the method.)"""
    if not headers:
        return []
    return [
        (str(name), value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
        for name, value in headers.items()
    ]


def hex_lines(body: dict[str, Any] | None) -> list[tuple[str, str]]:
    """A binary body's shown bytes as hex dump lines: (offset, "0a 1b ...")."""
    if not body or body.get("kind") != "binary":
        return []
    raw = bytes.fromhex(body["hex"])
    return [
        (
            f"{start:08x}",
            " ".join(f"{b:02x}" for b in raw[start : start + HEX_LINE_BYTES]),
        )
        for start in range(0, len(raw), HEX_LINE_BYTES)
    ]


# ---- the groups --------------------------------------------------------------------------


def build_groups(request: HttpRequest) -> dict[str, Any]:
    """``{"groups": [{"group", "topics", "live", "waiting", "total"}]}``: every group that
    subscribes to a topic now (``live``) or has dead letters recorded, by name.
    ``waiting`` counts records with status ``dead``, ``total`` all of them."""
    client = get_redis()
    topics: dict[str, list[str]] = {}
    for topic in list_topics(client):
        for group in groups_of(client, topic.name):
            topics.setdefault(group, []).append(topic.name)
    counts = {
        row["group"]: row
        for row in DeadLetter.objects.values("group").annotate(
            total=Count("id"), waiting=Count("id", filter=Q(status=Status.DEAD))
        )
    }
    return {
        "groups": [
            {
                "group": group,
                "topics": sorted(topics.get(group, [])),
                "live": group in topics,
                "waiting": counts[group]["waiting"] if group in counts else 0,
                "total": counts[group]["total"] if group in counts else 0,
            }
            for group in sorted(set(topics) | set(counts))
        ]
    }


# ---- the audit log -----------------------------------------------------------------------


def build_audit(request: HttpRequest) -> dict[str, Any]:
    """The audit API's answer (``action_views.build_audit``: ``?group=&actor=&action=
    &limit=``, newest first), each entry with ``at_ms``, plus ``filters`` (as given),
    ``limit`` and ``actions`` (every action name recorded, for the filter)."""
    params = request.GET
    filters = {
        "group": text_param(params.get("group"), "group", max_length=200),
        "actor": text_param(params.get("actor"), "actor", max_length=150),
        "action": text_param(params.get("action"), "action", max_length=40),
    }
    data = action_views.build_audit(request)
    limit = int_param(params.get("limit"), "limit", default=action_views.AUDIT_LIMIT)
    return {
        **data,
        "links": audit_links(params, data["older"], data["newer"]),
        "entries": [
            {**e, "at_ms": to_ms(datetime.fromisoformat(e["at"]))} for e in data["entries"]
        ],
        "filters": filters,
        "limit": limit,
        "actions": list(
            AuditEntry.objects.order_by("action").values_list("action", flat=True).distinct()
        ),
    }


def audit_links(params: Mapping[str, str], older: int | None, newer: int | None) -> dict[str, Any]:
    """The audit page's "older" / "newer" / "newest" links, keeping its filters."""
    kept = {
        name: params[name] for name in ("group", "actor", "action", "limit") if params.get(name)
    }
    return {
        "older": _query({**kept, "before": str(older)}) if older else None,
        "newer": _query({**kept, "after": str(newer)}) if newer else None,
        "newest": _query(kept),
        "is_newest": not (params.get("before") or params.get("after")),
    }


dead_letter_groups_page = page_view("deadletters/groups.html", build_groups)
dead_letter_groups_api = api_view(build_groups)
dead_letters_page = page_view("deadletters/list.html", build_list_page)
dead_letter_page = page_view("deadletters/detail.html", build_detail_page)
audit_page = page_view("deadletters/audit.html", build_audit)
