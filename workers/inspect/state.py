"""Queue state: each (queue, group)'s lag joined with what its lock owner reports on its
card (state, retries, last error; under key ordering the key-level state)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NotRequired, TypedDict

import redis

from lockstep.workers.cards import BlockedKey, QueueSnapshot
from lockstep.workers.inspect.clock import redis_now_ms
from lockstep.workers.inspect.consumers import (
    QueueCardKey,
    cards_of,
    consumers,
    live_consumers_named,
)
from lockstep.workers.inspect.lag import GroupLag, TopicLag, topic_lag
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import get_topic


class GroupState(GroupLag):
    """``GroupLag`` plus the owner's view of the queue.

    ``state``: the owner's (consuming, idle, suspended, blocked, paused, lock_expired,
    starting, stopped), ``unowned`` without a live lock, ``no_live_consumer`` while the
    lock (not expired yet) belongs to a consumer that is no longer live, ``unknown`` when
    the live owner's card does not show the queue (yet). The key-ordering fields are
    present only when the owner consumes the queue under key ordering; ``blocked_keys``
    is the 20 blocked longest and ``parked_key_states`` the first 50 held keys by name,
    ``(key, held|releasing)`` (the counts are exact)."""

    lock_age_ms: int | None
    state: str
    retries: int
    last_error: str
    head_offset: NotRequired[int]  # the owner's next message to hand (its failing one)
    low_water: NotRequired[int]
    highest_completed: NotRequired[int]
    in_flight: NotRequired[int]
    flow_paused: NotRequired[bool]
    blocked_keys: NotRequired[list[BlockedKey]]
    blocked_count: NotRequired[int]
    parked_count: NotRequired[int]
    parked_key_states: NotRequired[list[tuple[str, str]]]


class QueueGroups(TypedDict):
    """One queue of a ``TopicState``."""

    queue: int
    max_offset: int
    groups: list[GroupState]


class TopicState(TypedDict):
    name: str
    queue_count: int
    groups: list[str]
    queues: list[QueueGroups]  # by queue number (those asked for, when a subset was)
    generated_at_ms: int


class QueueState(TypedDict):
    topic: str
    queue: int
    max_offset: int
    generated_at_ms: int
    groups: list[GroupState]


def topic_state(client: redis.Redis, topic: str, queues: Iterable[int] | None = None) -> TopicState:
    """One topic as in ``overview``, each (queue, group) joined with its owner's card;
    with ``queues``, only those (``topic_lag``). Raises ``UnknownTopicError``."""
    now_ms = redis_now_ms(client)
    lag = topic_lag(client, get_topic(client, topic), now_ms, queues)
    owners = (g["owner"] for q in lag["queues"] for g in q["groups"] if g["owner"])
    live = consumers(client) if queues is None else live_consumers_named(client, owners)
    return join_cards(lag, cards_of(live, topic), {c["id"] for c in live}, now_ms)


def join_cards(
    lag: TopicLag, cards: dict[QueueCardKey, QueueSnapshot], live_ids: set[str], now_ms: int
) -> TopicState:
    """``lag`` (``topic_lag``) with each (queue, group) joined with its owner's snapshot
    (``group_state``); ``live_ids``: the live consumers' ids."""
    queues: list[QueueGroups] = []
    for q in lag["queues"]:
        ref = QueueRef(lag["name"], q["queue"])
        groups = [
            group_state(
                g,
                cards.get(QueueCardKey(ref, g["group"], g["owner"] or "")),
                now_ms,
                owner_live=g["owner"] in live_ids,
            )
            for g in q["groups"]
        ]
        queues.append({"queue": q["queue"], "max_offset": q["max_offset"], "groups": groups})
    return {
        "name": lag["name"],
        "queue_count": lag["queue_count"],
        "groups": lag["groups"],
        "queues": queues,
        "generated_at_ms": now_ms,
    }


def queue_state(client: redis.Redis, ref: QueueRef) -> QueueState:
    """One queue as in ``topic_state``, reading that queue alone. Raises
    ``UnknownTopicError``, or ``ValueError`` when the topic has no such queue."""
    state = topic_state(client, ref.topic, [ref.queue])
    count = state["queue_count"]
    if not 0 <= ref.queue < count:
        raise ValueError(f"topic {ref.topic!r} has no queue {ref.queue} (0..{count - 1})")
    return queue_of(state, ref.queue)


def queue_of(state: TopicState, queue: int) -> QueueState:
    """The ``queue_state`` of one queue of ``state`` (no Redis read); ``IndexError`` for a
    queue ``state`` does not list."""
    found = [q for q in state["queues"] if q["queue"] == queue]
    if not found:
        raise IndexError(queue)
    q = found[0]
    return {
        "topic": state["name"],
        "queue": queue,
        "max_offset": q["max_offset"],
        "generated_at_ms": state["generated_at_ms"],
        "groups": q["groups"],
    }


def group_state(
    g: GroupLag, card: QueueSnapshot | None, now_ms: int, *, owner_live: bool = True
) -> GroupState:
    """``g`` joined with its owner's snapshot of the queue (``None``: not on any card).
    ``owner_live``: the lock's owner is a live consumer; a lock still held by one that is
    not (killed, frozen, cut off) reads ``no_live_consumer`` until the lock expires."""
    granted = g["lock_granted_at_ms"]
    out: GroupState = {
        **g,
        "lock_age_ms": now_ms - granted if granted else None,
        "state": "unowned",
        "retries": 0,
        "last_error": "",
    }
    if g["owner"] is None:
        return out
    if not owner_live:
        out["state"] = "no_live_consumer"
        return out
    if card is None:
        out["state"] = "unknown"
        return out
    out["state"] = str(card.get("state", "unknown"))
    out["retries"] = int(card.get("retries", 0) or 0)
    out["last_error"] = str(card.get("last_error", "") or "")
    if "head_offset" in card:
        out["head_offset"] = int(card["head_offset"])
    _copy_key_state(out, card)
    return out


def _copy_key_state(out: GroupState, card: QueueSnapshot) -> None:
    if "low_water" in card:
        out["low_water"] = card["low_water"]
    if "highest_completed" in card:
        out["highest_completed"] = card["highest_completed"]
    if "in_flight" in card:
        out["in_flight"] = card["in_flight"]
    if "flow_paused" in card:
        out["flow_paused"] = card["flow_paused"]
    if "blocked_keys" in card:
        out["blocked_keys"] = card["blocked_keys"]
    if "blocked_count" in card:
        out["blocked_count"] = card["blocked_count"]
    if "parked_count" in card:
        out["parked_count"] = card["parked_count"]
    if "parked_keys" in card:
        out["parked_key_states"] = card["parked_keys"]
