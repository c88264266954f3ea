"""One consumer group on one topic: a page of its queues (lock, offsets, lag, state) from
the fleet state, paged, sorted and filtered on the server; under key ordering the lanes,
blocked keys and parked keys; and the group's stuck queues, as the overview counts them
(docs/fleet-state.md)."""

from __future__ import annotations

from typing import Any

import redis
from django.db.models import QuerySet
from django.http import HttpRequest

from lockstep.dashboard.monitor import queries
from lockstep.dashboard.web.pages import page_view
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.store import fleet_read
from lockstep.dashboard.web.store.models import QueueStatus
from lockstep.dashboard.web.views import api_view, require_group
from lockstep.workers.inspect import HeldKey, get_topic, group_members, held_keys

# Lists beside the table (stuck entries, blocked and held keys) show at most this many:
# a group of a thousand stuck queues names the first hundred and counts the rest.
LIST_LIMIT = 100


def build_group(request: HttpRequest, topic: str, group: str) -> dict[str, Any]:
    """``{"topic", "group", "generated_at_ms", "queue_count", "ordering", "consumers",
    "table": {...}, "queues": [...], "blocked_keys": [...], "parked_keys": [...],
    "lanes": [...], "stuck": [...], "totals": {...}, "view": {...}}``; see
    docs/http-api.md §3.

    ``queues`` is one page of the group's queues (``table``: paged, sorted and filtered
    as the query asks, ``web.store.fleet_read``); the lists beside it hold at most
    ``LIST_LIMIT`` entries each, ``totals`` counts them all. ``stuck`` is the group's part
    of the overview's stuck entries (``web.store.stuck``), so ``totals.stuck`` is the
    overview's count for the group; ``totals.owned`` counts the queues whose lock a live
    consumer holds."""
    client = get_redis()
    require_group(client, topic, group)
    view = fleet_read.table_view(request.GET, topic=topic, group=group)
    fleet_read.ensure_fresh(client)
    page = fleet_read.table(view)
    members = group_members(client, topic, group)
    mine = QueueStatus.objects.filter(topic=topic, group=group)
    totals = fleet_read.group_summary(topic, group) or {}
    parked = _held(client, topic, group, mine)
    return {
        "topic": topic,
        "group": group,
        "generated_at_ms": fleet_read.stamp()["refreshed_ms"],
        "queue_count": get_topic(client, topic).queues,
        "ordering": members[0]["ordering"] if members else None,
        "consumers": members,
        "table": {k: v for k, v in page.items() if k != "rows"},
        "queues": page["rows"],
        "blocked_keys": _blocked(mine),
        "parked_keys": parked,
        "lanes": queries.latest_lanes(topic, group, [m["id"] for m in members]),
        "stuck": _stuck(mine),
        "totals": {
            "lag": totals.get("lag", 0),
            "max_time_lag_s": totals.get("max_time_lag_s", 0.0),
            "owned": totals.get("owned", 0),
            "dead_letters": totals.get("dead_letters", 0),
            "blocked_keys": totals.get("blocked_keys", 0),
            "parked_keys": totals.get("held_keys", 0),
            "parked_messages": totals.get("parked", 0),
            "stuck": totals.get("stuck", 0),
        },
        "view": view.params(),
        "links": fleet_read.table_links(view, page),
        "states": fleet_read.STATES,
    }


def _stuck(rows: QuerySet[QueueStatus]) -> list[dict[str, Any]]:
    """The stuck entries of the group's longest stuck queues, longest first."""
    stuck = rows.exclude(stuck="").order_by("stuck_since_ms", "queue")[:LIST_LIMIT]
    entries = [a for r in stuck for a in r.stuck_entries]
    return sorted(entries, key=lambda a: (a["since_ms"], a["queue"], a["reason"]))[:LIST_LIMIT]


def _blocked(rows: QuerySet[QueueStatus]) -> list[dict[str, Any]]:
    """The blocked keys of the group (each queue's owner reports its 20 longest), the
    longest blocked first."""
    found = rows.filter(blocked_count__gt=0).order_by("queue")[:LIST_LIMIT]
    keys = [{"queue": r.queue, **b} for r in found for b in r.blocked_keys]
    return sorted(keys, key=lambda b: b.get("since_ms", 0))[:LIST_LIMIT]


def _held(
    client: redis.Redis, topic: str, group: str, rows: QuerySet[QueueStatus]
) -> list[HeldKey]:
    """The held keys of the group's queues that hold some (read from Redis for those
    queues only)."""
    queues = list(rows.filter(held_keys__gt=0).order_by("queue").values_list("queue", flat=True))
    if not queues:
        return []
    return held_keys(client, topic, group, queues[:LIST_LIMIT])[:LIST_LIMIT]


group_page = page_view("monitor/group.html", build_group)
group_api = api_view(build_group)
