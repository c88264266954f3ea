"""The overview's ``stats``: rates in and out, retries, dead letters and stuck queues per
topic and group, from the live snapshot (Redis) and the stored event history.

A queue is *stuck* when an operator should look at it now:
- ``no_progress``: it is behind (lag > 0) and the lag samples have shown the same
  committed offset, behind, for at least ``LOCKSTEP_STUCK_AFTER_SECONDS`` (60);
- ``blocked_key`` (key ordering): a key has been blocked by a failing message for at
  least ``LOCKSTEP_STUCK_AFTER_SECONDS`` (60) (the rest of the queue may still flow).
"""

from __future__ import annotations

from typing import Any

import redis
from django.conf import settings

from dashboard.monitor import queries
from workers.inspect import (
    GroupLag,
    Overview,
    QueueCardKey,
    QueueSnapshot,
    dead_letters_per_group,
    queue_cards,
)
from workers.refs import QueueRef

# Rates are "per second over the last minute": long enough to smooth the 10 s lag
# samples and the 0.5 s commit flushes, short enough to show a stall within a minute.
WINDOW_S = 60
# RocketMQ expires an unrenewed queue lock after 60 s; a queue that has not moved for as
# long is as good as unowned, and a blocked key that long will not heal by retrying.


def overview_stats(client: redis.Redis, snapshot: Overview) -> dict[str, Any]:
    """``{"window_s", "topics": [{"name", "in_per_s", "groups": [{"group", "out_per_s",
    "retries_per_min", "dead_letters", "lag", "stuck"}]}], "stuck": [alert, ...]}`` for
    the topics of ``snapshot`` (``workers.inspect.overview``)."""
    now_ms = int(snapshot["generated_at_ms"])
    names = [t["name"] for t in snapshot["topics"]]
    in_rates = queries.topic_in_rates(names, now_ms, WINDOW_S)
    committed = queries.committed_counts(names, now_ms, WINDOW_S)
    retries = queries.retry_counts(names, now_ms, WINDOW_S)
    dead = dead_letters_per_group(client, snapshot)
    stuck = stuck_queues(snapshot, queue_cards(client), now_ms)
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
    return {"window_s": WINDOW_S, "topics": topics, "stuck": stuck}


def stuck_queues(
    snapshot: Overview, cards: dict[QueueCardKey, QueueSnapshot], now_ms: int
) -> list[dict[str, Any]]:
    """Every stuck (topic, group, queue), the longest stuck first; ``cards`` as
    ``workers.inspect.queue_cards``."""
    alerts = []
    for topic in snapshot["topics"]:
        for q in topic["queues"]:
            ref = QueueRef(topic["name"], q["queue"])
            for g in q["groups"]:
                where = {"topic": topic["name"], "group": g["group"], "queue": q["queue"]}
                alerts += _not_moving(where, g, now_ms)
                owner = QueueCardKey(ref, g["group"], g["owner"] or "")
                alerts += _blocked(where, cards.get(owner), now_ms)
    return sorted(alerts, key=lambda a: (a["since_ms"], a["topic"], a["group"], a["queue"]))


def _not_moving(where: dict[str, Any], g: GroupLag, now_ms: int) -> list[dict[str, Any]]:
    if g["lag"] <= 0:
        return []
    since = queries.not_moving_since(
        where["topic"], where["group"], where["queue"], g["committed_offset"], now_ms
    )
    if since is None or now_ms - since < stuck_after_s() * 1000:
        return []
    waited = (now_ms - since) / 1000.0
    return [
        {
            **where,
            "reason": "no_progress",
            "since_ms": since,
            "for_s": round(waited, 1),
            "lag": g["lag"],
            "committed_offset": g["committed_offset"],
            "why": f"queue {where['queue']}: lag {g['lag']}, committed offset "
            f"{g['committed_offset']} has not moved for {duration(waited)}",
        }
    ]


def _blocked(
    where: dict[str, Any], card: QueueSnapshot | None, now_ms: int
) -> list[dict[str, Any]]:
    alerts = []
    for b in card.get("blocked_keys", []) if card else []:
        since = int(b.get("since_ms", 0))
        waited = (now_ms - since) / 1000.0
        if not since or waited < stuck_after_s():
            continue
        error = str(b.get("error", ""))
        alerts.append(
            {
                **where,
                "reason": "blocked_key",
                "since_ms": since,
                "for_s": round(waited, 1),
                "key": b.get("key", ""),
                "offset": b.get("offset"),
                "retries": b.get("retries", 0),
                "waiting": b.get("waiting", 0),
                "error": error,
                "why": f"queue {where['queue']}, key {b.get('key', '')} blocked at offset "
                f"{b.get('offset')} for {duration(waited)}, {b.get('waiting', 0)} "
                f"messages behind it, {b.get('retries', 0)} retries, last error: "
                f"{error[:200] or '(none)'}",
            }
        )
    return alerts


def duration(seconds: float) -> str:
    """``42 s``, ``4 min 5 s``, ``2 h 13 min``: for sentences an operator reads."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def stuck_after_s() -> float:
    """How long a queue may make no progress (or a key stay blocked) before it is stuck."""
    return float(settings.LOCKSTEP_STUCK_AFTER_SECONDS)
