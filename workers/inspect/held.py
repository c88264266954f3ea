"""Held keys (key ordering, ``after_dlq = hold``): a key whose message was dead-lettered
waits, its later messages parked, until the dead letter is replayed or discarded."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TypedDict

import redis

from lockstep.workers import keys
from lockstep.workers.message import Message, deserialize
from lockstep.workers.redis_types import as_bytes
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import get_topic


class Hold(TypedDict):
    """A held key's entry in the parked-keys hash (``dead_letter.lua`` writes it held,
    ``release_dead_letter.lua`` releasing). Fields an entry lacks read as ``None``;
    ``state`` as ``held``."""

    state: str  # held | releasing
    dlq_id: str | None  # the dead letter that holds the key
    offset: int | None  # that dead letter's offset
    since_ms: int | None  # held, or release begun, at (Redis time)


class HeldKey(TypedDict):
    """A held key of one group, with how many messages are parked behind it."""

    queue: int
    key: str
    state: str
    offset: int | None
    dlq_id: str | None
    since_ms: int | None
    messages: int


def holds(client: redis.Redis, ref: QueueRef, group: str) -> dict[str, Hold]:
    """The group's held keys on one queue: key -> its hold."""
    raw = client.hgetall(keys.parked_keys(ref, group))
    return {as_bytes(k).decode(): _hold(v) for k, v in raw.items()}


def _hold(raw: bytes | str) -> Hold:
    data: dict[str, Any] = json.loads(raw)
    return {
        "state": data.get("state", "held"),
        "dlq_id": data.get("dlq_id"),
        "offset": data.get("offset"),
        "since_ms": data.get("since"),
    }


def held_keys(
    client: redis.Redis, topic: str, group: str, queues: Iterable[int] | None = None
) -> list[HeldKey]:
    """Every held key of (``topic``, ``group``), by queue (within a queue in the parked-keys
    hash's order); with ``queues``, of those queues only. Raises ``UnknownTopicError``."""
    count = get_topic(client, topic).queues
    numbers = range(count) if queues is None else sorted({q for q in queues if 0 <= q < count})
    refs = [QueueRef(topic, q) for q in numbers]
    pipe = client.pipeline(transaction=False)
    for ref in refs:
        pipe.hgetall(keys.parked_keys(ref, group))
    held = [
        (ref, as_bytes(key).decode(), _hold(value))
        for ref, raw in zip(refs, pipe.execute(), strict=True)
        for key, value in raw.items()
    ]
    if not held:
        return []
    pipe = client.pipeline(transaction=False)
    for ref, key, _ in held:
        pipe.zcard(keys.parked_messages(ref, group, key))
    return [
        {"queue": ref.queue, "key": key, **hold, "messages": int(n)}
        for (ref, key, hold), n in zip(held, pipe.execute(), strict=True)
    ]


def parked_messages(client: redis.Redis, ref: QueueRef, group: str, key: str) -> list[Message]:
    """The messages parked behind held ``key``, in offset order."""
    members = client.zrange(keys.parked_messages(ref, group, key), 0, -1)
    return [deserialize(ref, as_bytes(m).decode()) for m in members]


def parked_offsets(client: redis.Redis, ref: QueueRef, group: str) -> dict[int, Hold]:
    """Offset of every message parked on the queue for the group -> its key's hold."""
    held = holds(client, ref, group)
    if not held:
        return {}
    pipe = client.pipeline(transaction=False)
    for key in held:
        pipe.zrange(keys.parked_messages(ref, group, key), 0, -1, withscores=True)
    return {
        int(score): hold
        for hold, members in zip(held.values(), pipe.execute(), strict=True)
        for _member, score in members
    }
