"""One queue: live state per group, offset/lag history for the chart, the lock-ownership
timeline, recent events and the messages being retried."""

from __future__ import annotations

from typing import Any

import redis
from django.http import HttpRequest

from lockstep.dashboard.monitor import queries
from lockstep.dashboard.monitor.routing import QUEUE_SOCKET_PATH
from lockstep.dashboard.web.pages import page_view
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.views import api_view, int_param, queue_param
from lockstep.workers.inspect import QueueState, dead_letter_counts, key_at, queue_state
from lockstep.workers.refs import GroupQueue, QueueRef

# The chart and timeline cover the last quarter hour by default: about 90 lag samples,
# the scale at which an operator reads "is it moving". At most a day.
DEFAULT_MINUTES = 15
MAX_MINUTES = 1440


def build_queue(request: HttpRequest, topic: str, queue: str) -> dict[str, Any]:
    """``queue_state`` (``topic``, ``queue``, ``max_offset``, ``generated_at_ms``,
    ``groups``) plus ``minutes``, ``since_ms``, ``series``, ``timeline``, ``rebalances``,
    ``events``, ``problems`` and ``dead_letters`` (group -> dead letters waiting on this
    queue); see docs/http-api.md §4."""
    client = get_redis()
    q = queue_param(client, topic, queue)
    minutes = int_param(
        request.GET.get("minutes"),
        "minutes",
        default=DEFAULT_MINUTES,
        minimum=1,
        maximum=MAX_MINUTES,
    )
    assert minutes is not None
    state = queue_state(client, QueueRef(topic, q))
    since = state["generated_at_ms"] - minutes * 60_000
    owners = {g["group"]: (g["owner"], g["token"]) for g in state["groups"] if g["owner"]}
    ref = QueueRef(topic, q)
    dead = dead_letter_counts(client, [GroupQueue(ref, g["group"]) for g in state["groups"]])
    return {
        **state,
        "minutes": minutes,
        "since_ms": since,
        "socket_path": QUEUE_SOCKET_PATH.format(topic=topic, queue=q),
        "series": queries.queue_series(topic, q, since),
        "timeline": queries.lock_timeline(topic, q, since, owners),
        "rebalances": queries.rebalances(topic, q, since),
        "events": queries.recent_events(topic, q),
        "problems": problems(client, state),
        "dead_letters": {cell.group: n for cell, n in dead.items()},
    }


def problems(client: redis.Redis, state: QueueState) -> list[dict[str, Any]]:
    """The messages being retried, per group, with their last error: under key ordering
    each blocked key's message; under queue ordering the head of the queue (the message at
    the committed offset) while its retry count is above zero."""
    out = []
    for g in state["groups"]:
        if "blocked_keys" in g:
            out += [
                {
                    "group": g["group"],
                    "kind": "blocked",
                    "key": b.get("key", ""),
                    "offset": b.get("offset"),
                    "retries": b.get("retries", 0),
                    "waiting": b.get("waiting", 0),
                    "error": b.get("error", ""),
                    "since_ms": b.get("since_ms", 0),
                }
                for b in g["blocked_keys"]
            ]
        elif g["retries"] > 0:
            offset = g["committed_offset"]
            out.append(
                {
                    "group": g["group"],
                    "kind": "retrying",
                    "key": key_at(client, QueueRef(state["topic"], state["queue"]), offset),
                    "offset": offset,
                    "retries": g["retries"],
                    "waiting": None,
                    "error": g["last_error"],
                    "since_ms": None,
                }
            )
    return out


queue_page = page_view("monitor/queue.html", build_queue)
queue_api = api_view(build_queue)
