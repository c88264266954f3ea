"""The live event feed: stored events, filtered, paged by stream ID: forward (``after``,
what the live page polls) and back through all history (``before``). Pages are keyed on
the stored event's row id, so events stored meanwhile never shift a page: "older" from a
page is exactly the events before its oldest one, "newer" those after its newest."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from django.http import HttpRequest, QueryDict

from lockstep.dashboard.monitor import queries
from lockstep.dashboard.monitor.routing import EVENTS_SOCKET_PATH
from lockstep.dashboard.web.pages import page_view
from lockstep.dashboard.web.store.models import Event
from lockstep.dashboard.web.views import BadParameter, api_view, int_param, text_param

# One poll answers at most this many events: a second's worth at a busy runtime's rate,
# small enough to render at once. A poller that gets ``has_more`` asks again at once.
MAX_LIMIT = 500
DEFAULT_LIMIT = 100
# Well-formed event type names; not only the known ones, so events of a newer runtime
# (or the ingester's own, like ``events_lost``) can be filtered too.
TYPE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
PERIODIC_CHOICES = ("show", "hide")


def feed_filter(params: QueryDict, periodic: str = "show") -> queries.FeedFilter:
    """The feed's filters from query parameters; ``BadParameter`` on a bad value.
    ``periodic`` (``show`` or ``hide``): whether the periodic event types are listed when
    the parameter of that name is absent (the JSON feed shows them, the page hides them)."""
    periodic = text_param(params.get("periodic"), "periodic", max_length=8) or periodic
    if periodic not in PERIODIC_CHOICES:
        raise BadParameter(f"periodic must be show or hide, got {periodic!r}")
    types = tuple(
        t
        for t in text_param(params.get("type"), "type", max_length=400).replace(" ", "").split(",")
        if t
    )
    bad = [t for t in types if not TYPE_NAME.match(t)]
    if bad:
        raise BadParameter(f"type {bad[0]!r} is not an event type name")
    after = text_param(params.get("after"), "after", max_length=42)
    if after and not queries.STREAM_ID.match(after):
        raise BadParameter(f"after must be an event stream ID like 1795257513451-0, got {after!r}")
    limit = int_param(
        params.get("limit"), "limit", default=DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT
    )
    return queries.FeedFilter(
        topic=text_param(params.get("topic"), "topic", max_length=128),
        group=text_param(params.get("group"), "group", max_length=128),
        queue=int_param(params.get("queue"), "queue"),
        types=types,
        key=text_param(params.get("key"), "key"),
        after=after,
        limit=limit or DEFAULT_LIMIT,
        hide_periodic=periodic == "hide",
    )


def stream_id_param(params: QueryDict, name: str) -> str:
    value = text_param(params.get(name), name, max_length=42)
    if value and not queries.STREAM_ID.match(value):
        raise BadParameter(f"{name} must be an event stream ID like 1795257513451-0, got {value!r}")
    return value


def older_page(f: queries.FeedFilter, before: str) -> queries.FeedPage:
    """The ``limit`` events matching ``f`` stored just before event ``before``, oldest
    first; ``has_more``: there are older ones still. An event no longer stored (pruned)
    reads as the newest page, with ``cursor_found`` false."""
    cursor = Event.objects.filter(stream_id=before).values_list("id", flat=True).first()
    if cursor is None:
        newest = queries.event_feed(replace(f, after=""))
        return queries.FeedPage(newest.events, newest.has_more, False)
    found = list(_matching(f).filter(id__lt=cursor).order_by("-id")[: f.limit + 1])
    return queries.FeedPage(found[: f.limit][::-1], len(found) > f.limit, True)


def _matching(f: queries.FeedFilter) -> Any:
    return queries.filtered_events(f)


def build_events_page(request: HttpRequest) -> dict[str, Any]:
    """``build_events`` with the periodic types hidden unless ``periodic=show``."""
    return build_events(request, periodic="hide")


def build_events(request: HttpRequest, periodic: str = "show") -> dict[str, Any]:
    """``{"events": [...oldest first], "last_id", "has_more", "cursor_found", "older",
    "newer", "filters", "types"}``; see docs/http-api.md §6.
    ``?before=<stream ID>`` pages back (the events just before it); ``older`` / ``newer``
    are the ``before`` / ``after`` cursors of the neighbouring pages (``None`` at either
    end: no older event stored, or this is the newest)."""
    f = feed_filter(request.GET, periodic)
    before = stream_id_param(request.GET, "before")
    page = older_page(f, before) if before else queries.event_feed(f)
    events = [queries.event_dict(e) for e in page.events]
    backwards = bool(before) and page.cursor_found
    older, newer = _older(events, page, f, backwards), _newer(events, page, f, backwards)
    return {
        "events": events,
        "last_id": events[-1]["id"] if events else f.after,
        "has_more": page.has_more,
        "cursor_found": page.cursor_found,
        "older": older,
        "newer": newer,
        "history": bool(before or f.after),
        "links": _links(request.GET, older, newer),
        "filters": {
            "topic": f.topic,
            "group": f.group,
            "queue": f.queue,
            "type": ",".join(f.types),
            "key": f.key,
            "limit": f.limit,
            "periodic": "hide" if f.hide_periodic else "show",
        },
        "periodic_types": list(queries.NOISY_TYPES),
        "types": sorted(queries.EVENT_TYPES),
    }


def _links(params: QueryDict, older: str | None, newer: str | None) -> dict[str, str | None]:
    """The page's own filters with the neighbouring pages' cursors; ``live``: the newest
    page, live again."""
    kept = params.copy()
    for name in ("before", "after"):
        kept.pop(name, None)

    def with_cursor(name: str, value: str | None) -> str | None:
        if value is None:
            return None
        query = kept.copy()
        query[name] = value
        return "?" + query.urlencode()

    return {
        "older": with_cursor("before", older),
        "newer": with_cursor("after", newer),
        "live": "?" + kept.urlencode(),
    }


def _older(
    events: list[dict[str, Any]], page: queries.FeedPage, f: queries.FeedFilter, backwards: bool
) -> str | None:
    """The ``before`` cursor of the page before this one: its oldest event, when a matching
    event older than it is stored."""
    if not events:
        return None
    if backwards:
        return events[0]["id"] if page.has_more else None
    oldest = Event.objects.filter(stream_id=events[0]["id"]).values_list("id", flat=True).first()
    older_exists = oldest is not None and _matching(f).filter(id__lt=oldest).exists()
    return events[0]["id"] if older_exists else None


def _newer(
    events: list[dict[str, Any]], page: queries.FeedPage, f: queries.FeedFilter, backwards: bool
) -> str | None:
    """The ``after`` cursor of the page after this one: its newest event, unless this page
    is the newest (a page without a cursor, or the last one forward)."""
    if not events:
        return None
    if backwards or (f.after and page.cursor_found and page.has_more):
        return str(events[-1]["id"])
    return None


events_page = page_view("monitor/events.html", build_events_page, socket_path=EVENTS_SOCKET_PATH)
events_api = api_view(build_events)
