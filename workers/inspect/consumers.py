"""Live consumers, read from their cards (``ls:consumer:<id>``, see ``workers.cards``).

A card is refreshed every heartbeat and expires (after two heartbeat timeouts) when its
process stops refreshing it. A consumer is *live* while its card's heartbeat is no older
than the heartbeat timeout (``LOCKSTEP_HEARTBEAT_TIMEOUT``, the same setting the group's
members use to drop a silent one): a process killed with SIGKILL stops counting as live
within that timeout, although its card lingers a while longer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, NamedTuple, TypedDict, cast

import redis

from lockstep.workers import keys
from lockstep.workers.cards import QueueSnapshot, SubscriptionCard
from lockstep.workers.config import Timings
from lockstep.workers.connection import get_each
from lockstep.workers.inspect.clock import redis_now_ms
from lockstep.workers.redis_types import as_bytes
from lockstep.workers.refs import QueueRef


class LiveConsumer(TypedDict):
    """One consumer instance: its card's fields plus its ``id`` and ``heartbeat_age_s``
    (Redis time minus the card's ``heartbeat_at_ms``, at least 0; the two clocks may
    differ by their skew). Fields missing from a card read as empty ("" / 0 / [])."""

    id: str
    host: str
    pid: int | None
    started_at_ms: int
    heartbeat_at_ms: int
    heartbeat_age_s: float
    subscriptions: list[SubscriptionCard]


class QueueCardKey(NamedTuple):
    """Where a queue snapshot comes from: the queue, the group, the consumer's id."""

    ref: QueueRef
    group: str
    consumer_id: str


class GroupMember(TypedDict):
    """A live consumer subscribed to one (topic, group), with its assignment."""

    id: str
    host: str
    pid: int | None
    ordering: str  # "queue" or "key"
    lanes: int  # 0 under queue ordering
    assigned: list[int]
    heartbeat_age_s: float


def consumers(client: redis.Redis, heartbeat_timeout_s: float | None = None) -> list[LiveConsumer]:
    """Every live consumer (a heartbeat within ``heartbeat_timeout_s``, by default the
    ``LOCKSTEP_HEARTBEAT_TIMEOUT`` setting), sorted by id.

    Not quite read-only: ids whose card has expired are removed from ``ls:consumers``
    (the set the consumers add themselves to), so it does not grow with dead processes."""
    ids = sorted(as_bytes(m).decode() for m in client.smembers(keys.CONSUMERS))
    if not ids:
        return []
    raw = get_each(client, [keys.consumer_info(i) for i in ids])
    now_ms = redis_now_ms(client)
    timeout_s = heartbeat_timeout() if heartbeat_timeout_s is None else heartbeat_timeout_s
    out = []
    stale = []
    for cid, blob in zip(ids, raw, strict=True):
        if blob is None:
            stale.append(cid)
            continue
        consumer = _live(cid, json.loads(blob), now_ms)
        if consumer["heartbeat_age_s"] <= timeout_s:
            out.append(consumer)
    if stale:
        client.srem(keys.CONSUMERS, *stale)
    return out


def registered_consumers(client: redis.Redis) -> list[LiveConsumer]:
    """Every consumer whose card has not expired yet, live or silent (a heartbeat older
    than the timeout: killed, frozen or cut off), sorted by id. Read-only."""
    ids = sorted(as_bytes(m).decode() for m in client.smembers(keys.CONSUMERS))
    if not ids:
        return []
    raw = get_each(client, [keys.consumer_info(i) for i in ids])
    now_ms = redis_now_ms(client)
    return [
        _live(cid, json.loads(blob), now_ms)
        for cid, blob in zip(ids, raw, strict=True)
        if blob is not None
    ]


def registered_consumers_named(client: redis.Redis, ids: Iterable[str]) -> list[LiveConsumer]:
    """As ``registered_consumers``, of ``ids`` only: a reader that knows whose cards it
    needs (the lock owners of the queues it reads) reads those alone."""
    wanted = sorted(set(ids))
    if not wanted:
        return []
    raw = get_each(client, [keys.consumer_info(i) for i in wanted])
    now_ms = redis_now_ms(client)
    return [
        _live(cid, json.loads(blob), now_ms)
        for cid, blob in zip(wanted, raw, strict=True)
        if blob is not None
    ]


def live_consumers_named(client: redis.Redis, ids: Iterable[str]) -> list[LiveConsumer]:
    """The live ones among ``ids``, as ``consumers`` judges liveness, sorted by id."""
    timeout_s = heartbeat_timeout()
    return [c for c in registered_consumers_named(client, ids) if c["heartbeat_age_s"] <= timeout_s]


def heartbeat_timeout() -> float:
    """Seconds without a heartbeat after which a consumer is no longer live."""
    return Timings.from_env().heartbeat_timeout_s


def _live(consumer_id: str, card: dict[str, Any], now_ms: int) -> LiveConsumer:
    heartbeat_ms = int(card.get("heartbeat_at_ms", 0) or 0)
    return {
        "id": consumer_id,
        "host": str(card.get("host", "")),
        "pid": card.get("pid"),
        "started_at_ms": int(card.get("started_at_ms", 0) or 0),
        "heartbeat_at_ms": heartbeat_ms,
        "heartbeat_age_s": round(max(0.0, (now_ms - heartbeat_ms) / 1000.0), 3),
        "subscriptions": [_subscription(s) for s in card.get("subscriptions", [])],
    }


def _subscription(sub: dict[str, Any]) -> SubscriptionCard:
    return {
        "topic": str(sub.get("topic", "")),
        "group": str(sub.get("group", "")),
        "handler": str(sub.get("handler", "")),
        "model": str(sub.get("model", "")),
        "ordering": str(sub.get("ordering", "")),
        "lanes": int(sub.get("lanes", 0) or 0),
        "assigned": list(sub.get("assigned", [])),
        "queues": cast(dict[str, QueueSnapshot], sub.get("queues") or {}),
    }


def queue_cards(client: redis.Redis, topic: str | None = None) -> dict[QueueCardKey, QueueSnapshot]:
    """Every queue snapshot on a live card (of ``topic`` only, when given), by where it
    comes from. Two consumers may both report a queue for a moment around a handover:
    look up the lock owner's, as ``(ref, group, owner)``."""
    return cards_of(consumers(client), topic)


def cards_of(live: list[LiveConsumer], topic: str | None) -> dict[QueueCardKey, QueueSnapshot]:
    """``queue_cards`` of already read consumers."""
    cards: dict[QueueCardKey, QueueSnapshot] = {}
    for card in live:
        for sub in card["subscriptions"]:
            if topic is not None and sub["topic"] != topic:
                continue
            for queue, snapshot in sub["queues"].items():
                where = QueueCardKey(QueueRef(sub["topic"], int(queue)), sub["group"], card["id"])
                cards[where] = snapshot
    return cards


def group_members(client: redis.Redis, topic: str, group: str) -> list[GroupMember]:
    """The live consumers subscribed to (``topic``, ``group``), sorted by id. A card that
    does not say its ordering counts as queue ordering (the default). Only the cards of
    the group's registered members are read (its registry), not every consumer's; a group
    with none registered (broadcasting consumers do not register) reads them all."""
    ids = [as_bytes(m).decode() for m in client.zrange(keys.registry(topic, group), 0, -1)]
    cards = live_consumers_named(client, ids) if ids else consumers(client)
    return [
        {
            "id": card["id"],
            "host": card["host"],
            "pid": card["pid"],
            "ordering": sub["ordering"] or "queue",
            "lanes": sub["lanes"],
            "assigned": sub["assigned"],
            "heartbeat_age_s": card["heartbeat_age_s"],
        }
        for card in cards
        for sub in card["subscriptions"]
        if sub["topic"] == topic and sub["group"] == group
    ]
