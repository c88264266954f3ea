"""One consumer group on one topic: per queue the lock, offsets, lag and state; under key
ordering the lanes, blocked keys and parked keys; and the group's stuck queues, as the
overview counts them (``web.store.stuck.read_stuck``)."""

from __future__ import annotations

from typing import Any, cast

from django.http import HttpRequest

from lockstep.dashboard.monitor import queries
from lockstep.dashboard.web.pages import page_view
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.store.stuck import read_stuck
from lockstep.dashboard.web.views import api_view, require_group
from lockstep.workers.inspect import (
    Overview,
    QueueGroups,
    TopicLag,
    TopicState,
    dead_letters_per_queue,
    group_members,
    held_keys,
    topic_state,
)

# The per-queue fields of ``workers.inspect.topic_state`` the group view passes on.
QUEUE_FIELDS = (
    "owner",
    "token",
    "lock_age_ms",
    "lock_expires_in_ms",
    "lock_granted_at_ms",
    "committed_offset",
    "completed_above",
    "parked",
    "lag",
    "time_lag_s",
    "state",
    "retries",
    "last_error",
    "low_water",
    "highest_completed",
    "in_flight",
    "flow_paused",
    "blocked_count",
    "parked_count",
)


def build_group(request: HttpRequest, topic: str, group: str) -> dict[str, Any]:
    """``{"topic", "group", "generated_at_ms", "queue_count", "ordering", "consumers",
    "queues": [...], "blocked_keys": [...], "parked_keys": [...], "lanes": [...],
    "stuck": [...], "totals": {...}}``; see docs/http-api.md §3.

    ``stuck`` is the group's part of the overview's stuck list (``web.store.stuck.read_stuck``,
    held keys included), so ``totals.stuck`` is the overview's count for the group;
    ``totals.owned`` counts the queues whose lock a live consumer holds."""
    client = get_redis()
    require_group(client, topic, group)
    state = topic_state(client, topic)
    members = group_members(client, topic, group)
    dead = dead_letters_per_queue(client, topic, group)
    queues = [_queue_row(q, group, dead.get(q["queue"], 0)) for q in state["queues"]]
    blocked = [{"queue": row["queue"], **b} for row in queues for b in row.pop("blocked_keys", [])]
    parked = held_keys(client, topic, group)
    stuck = [a for a in read_stuck(client, _as_overview(state)) if a["group"] == group]
    return {
        "topic": topic,
        "group": group,
        "generated_at_ms": state["generated_at_ms"],
        "queue_count": state["queue_count"],
        "ordering": members[0]["ordering"] if members else None,
        "consumers": members,
        "queues": queues,
        "blocked_keys": sorted(blocked, key=lambda b: b.get("since_ms", 0)),
        "parked_keys": parked,
        "lanes": queries.latest_lanes(topic, group, [m["id"] for m in members]),
        "stuck": stuck,
        "totals": {
            "lag": sum(r["lag"] for r in queues),
            "max_time_lag_s": max((r["time_lag_s"] for r in queues), default=0.0),
            "owned": sum(1 for r in queues if r["owner"] and r["state"] != "no_live_consumer"),
            "dead_letters": sum(dead.values()),
            "blocked_keys": len(blocked),
            "parked_keys": len(parked),
            "parked_messages": sum(p["messages"] for p in parked),
            "stuck": len(stuck),
        },
    }


def _as_overview(state: TopicState) -> Overview:
    """``state`` as an ``Overview`` of its one topic: a ``TopicState`` is a ``TopicLag``
    whose groups carry more fields."""
    return {"generated_at_ms": state["generated_at_ms"], "topics": [cast(TopicLag, state)]}


def _queue_row(q: QueueGroups, group: str, dead_letters: int) -> dict[str, Any]:
    (g,) = [g for g in q["groups"] if g["group"] == group]
    fields: dict[str, Any] = dict(g)
    row: dict[str, Any] = {
        "queue": q["queue"],
        "max_offset": q["max_offset"],
        "dead_letters": dead_letters,
    }
    row.update({name: fields[name] for name in QUEUE_FIELDS if name in fields})
    if "blocked_keys" in g:
        row["blocked_keys"] = list(g["blocked_keys"])
    return row


group_page = page_view("monitor/group.html", build_group)
group_api = api_view(build_group)
