"""The live event feed: stored events, filtered, paged forward by stream ID."""

from __future__ import annotations

import re
from typing import Any

from django.http import HttpRequest, QueryDict

from lockstep.dashboard.monitor import queries
from lockstep.dashboard.monitor.routing import EVENTS_SOCKET_PATH
from lockstep.dashboard.monitor.views.common import (
    BadParameter,
    api_view,
    int_param,
    page_view,
    text_param,
)

# One poll answers at most this many events: a second's worth at a busy runtime's rate,
# small enough to render at once. A poller that gets ``has_more`` asks again at once.
MAX_LIMIT = 500
DEFAULT_LIMIT = 100
# Well-formed event type names; not only the known ones, so events of a newer runtime
# (or the ingester's own, like ``events_lost``) can be filtered too.
TYPE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def feed_filter(params: QueryDict) -> queries.FeedFilter:
    """The feed's filters from query parameters; ``BadParameter`` on a bad value."""
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
    )


def build_events(request: HttpRequest) -> dict[str, Any]:
    """``{"events": [...oldest first], "last_id", "has_more", "cursor_found", "filters",
    "types"}``; see README "Dashboard pages and JSON API"."""
    f = feed_filter(request.GET)
    page = queries.event_feed(f)
    events = [queries.event_dict(e) for e in page.events]
    return {
        "events": events,
        "last_id": events[-1]["id"] if events else f.after,
        "has_more": page.has_more,
        "cursor_found": page.cursor_found,
        "filters": {
            "topic": f.topic,
            "group": f.group,
            "queue": f.queue,
            "type": ",".join(f.types),
            "key": f.key,
            "limit": f.limit,
        },
        "types": sorted(queries.EVENT_TYPES),
    }


events_page = page_view("monitor/events.html", build_events, socket_path=EVENTS_SOCKET_PATH)
events_api = api_view(build_events)
