"""The one implementation of a *stuck* queue (docs/stuck.md): the overview and its Stuck
list, the group page, the ``queue_stuck`` alert rule and ``/metrics`` all call
``read_stuck`` (or ``stuck_queues``), and nothing else decides it.

In short (docs/stuck.md has the whole definition): a queue is stuck for a group when it
has work waiting and has made no progress since ``since_ms`` for at least
``LOCKSTEP_STUCK_AFTER_SECONDS`` (T). Each entry carries one reason: ``no_live_consumer``
(since the dead owner's last heartbeat), ``unowned`` and ``no_progress`` (since the lag
samples first showed the current progress, ``queries.not_moving_since``),
``blocked_key`` (since the blocking message first failed) and ``held_key`` (since the
hold began). No reason is reported before ``now - since >= T``.

``stuck_queues`` is the pure rule over what was read; ``read_stuck`` reads what it needs
from Redis (consumers' heartbeats, held keys) and applies it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import redis
from django.conf import settings
from django.template.defaultfilters import pluralize

from lockstep.dashboard.web.formatting import duration
from lockstep.dashboard.web.store import queries
from lockstep.workers.inspect import (
    GroupLag,
    HeldKey,
    LiveConsumer,
    Overview,
    QueueCardKey,
    QueueSnapshot,
    held_keys,
    registered_consumers,
)
from lockstep.workers.inspect.consumers import cards_of, heartbeat_timeout
from lockstep.workers.refs import QueueRef

# A held-key entry names at most this many keys: enough to look one up, short enough for
# one line of the overview's Stuck list (``held_keys`` says how many there are).
HELD_KEYS_NAMED = 5

Alert = dict[str, Any]


class NotMoving(Protocol):
    """``queries.not_moving_since``'s signature: (topic, group, queue, committed offset,
    now, done) -> since when (ms) the queue has not moved, or ``None``."""

    def __call__(
        self, topic: str, group: str, queue: int, committed: int, now_ms: int, done: int | None
    ) -> int | None: ...


def read_stuck(
    client: redis.Redis, snapshot: Overview, registered: list[LiveConsumer] | None = None
) -> list[Alert]:
    """``stuck_queues`` of ``snapshot`` with every consumer's heartbeat and card
    (``registered``: ``workers.inspect.registered_consumers``, read unless given) and the
    held keys of every group that has some."""
    now_ms = int(snapshot["generated_at_ms"])
    known = registered_consumers(client) if registered is None else registered
    beats = heartbeats_of(known)
    live = [c for c in known if _is_live(beats[c["id"]], now_ms)]
    return stuck_queues(
        snapshot,
        cards_of(live, None),
        now_ms,
        heartbeats=beats,
        holds=_holds(client, snapshot),
    )


def heartbeats_of(registered: list[LiveConsumer]) -> dict[str, int]:
    """Consumer id -> its last heartbeat (Redis ms)."""
    return {c["id"]: c["heartbeat_at_ms"] for c in registered}


def owners_not_live(snapshot: Overview, heartbeats: Mapping[str, int], now_ms: int) -> list[str]:
    """The lock owners in ``snapshot`` that are no longer live, sorted."""
    owners = {
        g["owner"]
        for t in snapshot["topics"]
        for q in t["queues"]
        for g in q["groups"]
        if g["owner"]
    }
    return sorted(o for o in owners if not _is_live(heartbeats.get(o), now_ms))


def _holds(client: redis.Redis, snapshot: Overview) -> dict[tuple[str, str], list[HeldKey]]:
    """``held_keys`` of every (topic, group) whose lag counts held keys."""
    wanted = {
        (t["name"], g["group"])
        for t in snapshot["topics"]
        for q in t["queues"]
        for g in q["groups"]
        if g["parked_keys"]
    }
    return {(topic, group): held_keys(client, topic, group) for topic, group in sorted(wanted)}


def stuck_queues(
    snapshot: Overview,
    cards: dict[QueueCardKey, QueueSnapshot],
    now_ms: int,
    *,
    heartbeats: Mapping[str, int] | None = None,
    holds: Mapping[tuple[str, str], list[HeldKey]] | None = None,
    not_moving: NotMoving | None = None,
) -> list[Alert]:
    """Every stuck (topic, group, queue), the longest stuck first: dicts with ``topic``,
    ``group``, ``queue``, ``reason``, ``since_ms``, ``for_s`` and ``why`` (a sentence for
    an operator), plus the reason's own fields. ``cards`` as ``workers.inspect.queue_cards``.

    ``heartbeats``: consumer id -> last heartbeat (ms) of every consumer with a card, live
    or not (``heartbeats_of``); without it a lock owner counts as live when some snapshot
    in ``cards`` is its (wrong for a moment after a consumer's first lock, before its card
    shows the queue). ``holds``: (topic, group) -> ``held_keys``; without it no held-key
    entry is made (when a hold began is unknown). ``not_moving``: answers as
    ``queries.not_moving_since`` (the default) does, for a reader that can tell from its
    own readings that a queue moved and skip the query. Every entry's ``now_ms -
    since_ms`` is at least ``LOCKSTEP_STUCK_AFTER_SECONDS`` (docs/stuck.md)."""
    since_of = queries.not_moving_since if not_moving is None else not_moving
    live_ids = {where.consumer_id for where in cards}
    alerts: list[Alert] = []
    for topic in snapshot["topics"]:
        for q in topic["queues"]:
            ref = QueueRef(topic["name"], q["queue"])
            for g in q["groups"]:
                where = {"topic": topic["name"], "group": g["group"], "queue": q["queue"]}
                owner = g["owner"]
                done = q["max_offset"] - g["lag"]
                if owner is None:
                    alerts += _not_moving(where, g, done, now_ms, "unowned", since_of)
                else:
                    beat = heartbeats.get(owner) if heartbeats is not None else None
                    live = owner in live_ids if heartbeats is None else _is_live(beat, now_ms)
                    alerts += (
                        _not_moving(where, g, done, now_ms, "no_progress", since_of)
                        if live
                        else _no_live_consumer(where, g, beat, now_ms)
                    )
                card = cards.get(QueueCardKey(ref, g["group"], owner or ""))
                alerts += _blocked(where, card, now_ms)
                alerts += _held(where, g, holds, now_ms)
    return sorted(alerts, key=lambda a: (a["since_ms"], a["topic"], a["group"], a["queue"]))


def _is_live(heartbeat_ms: int | None, now_ms: int) -> bool:
    """As ``workers.inspect.consumers``: a heartbeat within the heartbeat timeout."""
    return heartbeat_ms is not None and (now_ms - heartbeat_ms) / 1000.0 <= heartbeat_timeout()


def _waiting(g: GroupLag) -> int:
    """Messages waiting to be consumed: the lag less the parked ones (those wait for an
    operator and are the ``held_key`` entry's)."""
    return g["lag"] - g["parked"]


def _old_enough(since_ms: int, now_ms: int) -> bool:
    """The one threshold of every reason: no progress for at least T."""
    return now_ms - since_ms >= stuck_after_s() * 1000


def _not_moving(
    where: Alert, g: GroupLag, done: int, now_ms: int, reason: str, since_of: NotMoving
) -> list[Alert]:
    if _waiting(g) <= 0:
        return []
    since = since_of(
        where["topic"], where["group"], where["queue"], g["committed_offset"], now_ms, done
    )
    if since is None or not _old_enough(since, now_ms):
        return []
    waited = (now_ms - since) / 1000.0
    lock = "no consumer holds its lock, " if reason == "unowned" else ""
    return [
        {
            **where,
            "reason": reason,
            "since_ms": since,
            "for_s": round(waited, 1),
            "lag": g["lag"],
            "committed_offset": g["committed_offset"],
            "why": f"queue {where['queue']}: {lock}lag {g['lag']}, committed offset "
            f"{g['committed_offset']} has not moved for {duration(waited)}",
        }
    ]


def _no_live_consumer(
    where: Alert, g: GroupLag, heartbeat_ms: int | None, now_ms: int
) -> list[Alert]:
    if _waiting(g) <= 0:
        return []
    timeout_s = heartbeat_timeout()
    # Without the card the heartbeat is at least a timeout old: that is all we know.
    since = heartbeat_ms if heartbeat_ms is not None else now_ms - int(timeout_s * 1000)
    if not _old_enough(since, now_ms):
        return []
    silent = (now_ms - since) / 1000.0
    heard = (
        f"which has sent no heartbeat for {duration(silent)}"
        if heartbeat_ms is not None
        else f"which has sent no heartbeat for over {duration(timeout_s)} (its card is gone)"
    )
    expires = g["lock_expires_in_ms"]
    return [
        {
            **where,
            "reason": "no_live_consumer",
            "since_ms": since,
            "for_s": round(silent, 1),
            "owner": g["owner"],
            "lag": g["lag"],
            "committed_offset": g["committed_offset"],
            "lock_expires_in_ms": expires,
            "why": f"queue {where['queue']}: lag {g['lag']}; the lock still names consumer "
            f"{g['owner']}, {heard}"
            + (f"; the lock expires in {duration((expires or 0) / 1000.0)}" if expires else ""),
        }
    ]


def _blocked(where: Alert, card: QueueSnapshot | None, now_ms: int) -> list[Alert]:
    alerts = []
    for b in card.get("blocked_keys", []) if card else []:
        since = int(b.get("since_ms", 0))
        waited = (now_ms - since) / 1000.0
        if not since or not _old_enough(since, now_ms):
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


def _held(
    where: Alert,
    g: GroupLag,
    holds: Mapping[tuple[str, str], list[HeldKey]] | None,
    now_ms: int,
) -> list[Alert]:
    if not g["parked_keys"]:
        return []
    if holds is None:  # when each hold began is unknown: none is old enough
        return []
    # Only the keys held for at least T: a younger hold is not stuck yet (key_held, its
    # own alert, may tell of it sooner).
    held = [
        h
        for h in holds.get((where["topic"], where["group"]), [])
        if h["queue"] == where["queue"]
        and h["state"] == "held"
        and h["since_ms"] is not None
        and _old_enough(h["since_ms"], now_ms)
    ]
    if not held:
        return []
    held.sort(key=lambda h: (h["since_ms"] or now_ms, h["key"]))
    keys = [h["key"] for h in held]
    count, since = len(held), held[0]["since_ms"] or now_ms
    # Every count of the sentence is of these keys: a younger hold's messages are
    # parked too (the group's ``parked``) but are not these keys' (nor stuck yet).
    parked = sum(h["messages"] for h in held)
    waited = max(0.0, (now_ms - since) / 1000.0)
    return [
        {
            **where,
            "reason": "held_key",
            "since_ms": since,
            "for_s": round(waited, 1),
            "key": keys[0] if keys else "",
            "keys": keys[:HELD_KEYS_NAMED],
            "held_keys": count,
            "parked": parked,
            "why": f"queue {where['queue']}: {count} key{'s' if count != 1 else ''} held "
            f"behind {'their dead letters' if count != 1 else 'its dead letter'}"
            + (f" ({_named(keys, HELD_KEYS_NAMED)})" if keys else "")
            + f", {parked} message{pluralize(parked)} parked, for {duration(waited)}: "
            "waiting for a replay or discard",
        }
    ]


def _named(names: list[str], limit: int) -> str:
    """``a, b, c`` or, past ``limit``, ``a, b, c and 4 more``: the first names and how
    many the list leaves out, so the list says how many there are."""
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def stuck_after_s() -> float:
    """T: how long a queue with work waiting may make no progress (a key stay blocked or
    held, a dead owner stay silent) before it is stuck (docs/stuck.md)."""
    return float(settings.LOCKSTEP_STUCK_AFTER_SECONDS)
