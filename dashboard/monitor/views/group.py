"""One consumer group on one topic: per queue the lock, offsets, lag and state; under key
ordering the lanes, blocked keys and parked keys."""

from __future__ import annotations

from typing import Any

import redis
from django.http import HttpRequest

from dashboard.monitor import queries
from dashboard.monitor.redis_conn import get_redis
from dashboard.monitor.views.common import api_view, page_view, require_group
from workers import keys
from workers.broker import Broker
from workers.inspect import consumers, topic_state

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
    "totals": {...}}``; see README "Dashboard pages and JSON API"."""
    client = get_redis()
    require_group(client, topic, group)
    state = topic_state(client, topic)
    members = _members(client, topic, group)
    dead = _dead_letters(client, topic, group, state["queue_count"])
    queues = [_queue_row(q, group, dead[q["queue"]]) for q in state["queues"]]
    blocked = [
        {"queue": row["queue"], **b, "since_ms": int(float(b.get("since", 0)) * 1000)}
        for row in queues
        for b in row.pop("blocked_keys", [])
    ]
    parked = _parked_keys(client, topic, group, state["queue_count"])
    return {
        "topic": topic,
        "group": group,
        "generated_at_ms": state["generated_at_ms"],
        "queue_count": state["queue_count"],
        "ordering": members[0]["ordering"] if members else None,
        "consumers": members,
        "queues": queues,
        "blocked_keys": sorted(blocked, key=lambda b: b["since_ms"]),
        "parked_keys": parked,
        "lanes": queries.latest_lanes(topic, group, [m["id"] for m in members]),
        "totals": {
            "lag": sum(r["lag"] for r in queues),
            "max_time_lag_s": max((r["time_lag_s"] for r in queues), default=0.0),
            "owned": sum(1 for r in queues if r["owner"]),
            "dead_letters": sum(dead.values()),
            "blocked_keys": len(blocked),
            "parked_keys": len(parked),
            "parked_messages": sum(p["messages"] for p in parked),
        },
    }


def _queue_row(q: dict[str, Any], group: str, dead_letters: int) -> dict[str, Any]:
    (g,) = [g for g in q["groups"] if g["group"] == group]
    row = {"queue": q["queue"], "max_offset": q["max_offset"], "dead_letters": dead_letters}
    row.update({name: g[name] for name in QUEUE_FIELDS if name in g})
    if "blocked_keys" in g:
        row["blocked_keys"] = list(g["blocked_keys"])
    return row


def _members(client: redis.Redis, topic: str, group: str) -> list[dict[str, Any]]:
    """The live consumers subscribed to (topic, group), with their assignment."""
    out = []
    for card in consumers(client):
        for sub in card.get("subscriptions", []):
            if sub.get("topic") == topic and sub.get("group") == group:
                out.append(
                    {
                        "id": card["id"],
                        "host": card.get("host", ""),
                        "pid": card.get("pid"),
                        "ordering": sub.get("ordering", "queue"),
                        "lanes": sub.get("lanes", 0),
                        "assigned": sub.get("assigned", []),
                        "heartbeat_age_s": card["heartbeat_age_s"],
                    }
                )
    return out


def _dead_letters(client: redis.Redis, topic: str, group: str, count: int) -> dict[int, int]:
    pipe = client.pipeline(transaction=False)
    for q in range(count):
        pipe.xlen(keys.dead_letters(topic, q, group))
    return {q: int(n) for q, n in enumerate(pipe.execute())}


def _parked_keys(client: redis.Redis, topic: str, group: str, count: int) -> list[dict[str, Any]]:
    """Held keys (``after_dlq = hold``) with their state and how many messages wait."""
    broker = Broker(client)
    held = [
        (q, key, hold)
        for q in range(count)
        for key, hold in broker.parked_keys(topic, group, q).items()
    ]
    pipe = client.pipeline(transaction=False)
    for q, key, _ in held:
        pipe.zcard(keys.parked_messages(topic, q, group, key))
    return [
        {
            "queue": q,
            "key": key,
            "state": hold.get("state", "held"),
            "offset": hold.get("offset"),
            "dlq_id": hold.get("dlq_id"),
            "since_ms": hold.get("since"),
            "messages": int(n),
        }
        for (q, key, hold), n in zip(held, pipe.execute() if held else [], strict=True)
    ]


group_page = page_view("monitor/group.html", build_group)
group_api = api_view(build_group)
