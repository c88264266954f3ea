"""The overview's ``stats``: rates in and out, retries, dead letters and stuck queues per
topic and group. Stuck queues are ``web.store.stuck``'s (the one implementation of
*stuck*, docs/stuck.md).
"""

from __future__ import annotations

from typing import Any

import redis

from lockstep.dashboard.monitor import queries
from lockstep.dashboard.web.store.stuck import heartbeats_of, owners_not_live, read_stuck
from lockstep.workers.inspect import Overview, dead_letters_per_group, registered_consumers

# Rates are "per second over the last minute": long enough to smooth the 10 s lag
# samples and the 0.5 s commit flushes, short enough to show a stall within a minute.
WINDOW_S = 60


def overview_stats(client: redis.Redis, snapshot: Overview) -> dict[str, Any]:
    """``{"window_s", "topics": [{"name", "in_per_s", "groups": [{"group", "out_per_s",
    "retries_per_min", "dead_letters", "lag", "stuck"}]}], "stuck": [alert, ...],
    "owners_not_live": [consumer id, ...]}`` for the topics of ``snapshot``
    (``workers.inspect.overview``). A group's ``stuck`` counts its entries in ``stuck``
    (``read_stuck``); ``owners_not_live`` are the lock owners in ``snapshot`` that are no
    longer live, sorted."""
    now_ms = int(snapshot["generated_at_ms"])
    names = [t["name"] for t in snapshot["topics"]]
    in_rates = queries.topic_in_rates(names, now_ms, WINDOW_S)
    committed = queries.committed_counts(names, now_ms, WINDOW_S)
    retries = queries.retry_counts(names, now_ms, WINDOW_S)
    dead = dead_letters_per_group(client, snapshot)
    registered = registered_consumers(client)
    stuck = read_stuck(client, snapshot, registered)
    topics = []
    for topic in snapshot["topics"]:
        name = topic["name"]
        groups = [
            {
                "group": group,
                "out_per_s": round(committed.get((name, group), 0) / WINDOW_S, 3),
                "retries_per_min": round(retries.get((name, group), 0) * 60 / WINDOW_S),
                "dead_letters": dead.get((name, group), 0),
                "lag": sum(
                    g["lag"] for q in topic["queues"] for g in q["groups"] if g["group"] == group
                ),
                "stuck": sum(1 for s in stuck if s["topic"] == name and s["group"] == group),
            }
            for group in topic["groups"]
        ]
        topics.append({"name": name, "in_per_s": in_rates.get(name), "groups": groups})
    return {
        "window_s": WINDOW_S,
        "topics": topics,
        "stuck": stuck,
        "owners_not_live": owners_not_live(snapshot, heartbeats_of(registered), now_ms),
    }
