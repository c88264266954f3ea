"""Lag per (queue, group): how far each consumer group is behind, in messages and in time.

A topic is read in at most three pipelined round trips after its group list: locks and
offsets of every (queue, group); the held keys' parked sets; the oldest unconsumed entry
of each (queue, group) that is behind.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TypedDict

import redis

from lockstep.workers import keys
from lockstep.workers.inspect.clock import redis_now_ms
from lockstep.workers.offset_tracker import decode_ranges
from lockstep.workers.redis_types import as_bytes
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import Topic, groups_of, list_topics


class GroupLag(TypedDict):
    """One group on one queue.

    ``lag`` (messages) = max_offset - committed_offset - completed_above + parked: under
    key ordering offsets done above the low-water mark are not behind, parked messages
    (held keys) are, though the committed offset moved past them. ``time_lag_s`` = now -
    produce time of the oldest unconsumed or parked message; 0.0 when caught up. The
    ``owner`` and ``lock_*`` fields are ``None`` without a live lock; ``token`` is the
    latest grant's fencing token, live or not."""

    group: str
    owner: str | None
    token: int
    lock_expires_in_ms: int | None
    lock_granted_at_ms: int | None
    committed_offset: int
    completed_above: int
    parked: int  # messages parked behind held keys
    parked_keys: int  # held keys
    lag: int
    time_lag_s: float


class QueueLag(TypedDict):
    queue: int
    max_offset: int  # the next offset to be produced
    groups: list[GroupLag]  # one per group of the topic, in ``groups`` order


class TopicLag(TypedDict):
    name: str
    queue_count: int
    groups: list[str]  # every group that ever subscribed, sorted
    queues: list[QueueLag]  # by queue number (every queue, unless a subset was asked for)


class Overview(TypedDict):
    generated_at_ms: int  # Redis time of the reading
    topics: list[TopicLag]  # sorted by name


# (queue, group) -> the produce time (epoch ms) of the oldest parked message.
_OldestParked = dict[tuple[int, str], int]


def overview(client: redis.Redis) -> Overview:
    """Every topic's queues and groups with their lag (see ``GroupLag``)."""
    now_ms = redis_now_ms(client)
    return {
        "generated_at_ms": now_ms,
        "topics": [topic_lag(client, t, now_ms) for t in list_topics(client)],
    }


def topic_lag(
    client: redis.Redis, topic: Topic, now_ms: int, queues: Iterable[int] | None = None
) -> TopicLag:
    """One topic as in ``overview``; lock liveness and time lag are judged at ``now_ms``
    (Redis time). With ``queues``, only those queues are read and listed (in the order
    given; numbers outside the topic are left out): a reader of a few queues pays for
    those, not for the topic."""
    groups = groups_of(client, topic.name)
    numbers = range(topic.queues) if queues is None else _within(queues, topic.queues)
    refs = [QueueRef(topic.name, q) for q in numbers]
    lags = _locks_and_offsets(client, refs, groups, now_ms)
    oldest_parked = _add_parked(client, topic.name, lags)
    _add_time_lag(client, topic.name, lags, oldest_parked, now_ms)
    return {"name": topic.name, "queue_count": topic.queues, "groups": groups, "queues": lags}


def _within(queues: Iterable[int], count: int) -> list[int]:
    return [q for q in dict.fromkeys(queues) if 0 <= q < count]


def _locks_and_offsets(
    client: redis.Redis, refs: list[QueueRef], groups: list[str], now_ms: int
) -> list[QueueLag]:
    pipe = client.pipeline(transaction=False)
    for ref in refs:
        pipe.get(keys.sequence(ref))
        for g in groups:
            pipe.hgetall(keys.lock(ref, g))
            pipe.hgetall(keys.offset(ref, g))
    replies = iter(pipe.execute())
    queues: list[QueueLag] = []
    for ref in refs:
        max_offset = int(next(replies) or 0)
        queues.append(
            {
                "queue": ref.queue,
                "max_offset": max_offset,
                "groups": [
                    group_lag(g, next(replies), next(replies), max_offset, now_ms) for g in groups
                ],
            }
        )
    return queues


def group_lag(
    group: str, lock: dict[bytes, bytes], offset: dict[bytes, bytes], max_offset: int, now_ms: int
) -> GroupLag:
    """A ``GroupLag`` from the raw lock and offset hashes, before parked messages are
    counted (``parked`` 0) and the time lag is read (``time_lag_s`` 0.0)."""
    owner = lock.get(b"owner", b"").decode()
    expires = int(lock.get(b"expires_at", b"0") or 0)
    live = bool(owner) and expires > now_ms
    committed = int(offset.get(b"committed", b"0") or 0)
    completed = sum(
        b - a + 1 for a, b in decode_ranges(as_bytes(offset.get(b"completed", b"")).decode())
    )
    return {
        "group": group,
        "owner": owner if live else None,
        "token": int(lock.get(b"token", b"0") or 0),
        "lock_expires_in_ms": expires - now_ms if live else None,
        "lock_granted_at_ms": int(lock.get(b"granted_at", b"0") or 0) if live else None,
        "committed_offset": committed,
        "completed_above": completed,
        "parked": 0,
        "parked_keys": 0,
        "lag": max(0, max_offset - committed - completed),
        "time_lag_s": 0.0,
    }


def _add_parked(client: redis.Redis, topic: str, queues: list[QueueLag]) -> _OldestParked:
    """Count held keys and parked messages into each group (and its lag); return the
    oldest parked produce time per (queue, group) that has one."""
    cells = [(q["queue"], g) for q in queues for g in q["groups"]]
    pipe = client.pipeline(transaction=False)
    for queue, g in cells:
        pipe.hkeys(keys.parked_keys(QueueRef(topic, queue), g["group"]))
    held = [
        (cell, [as_bytes(k).decode() for k in ks])
        for cell, ks in zip(cells, pipe.execute(), strict=True)
        if ks
    ]
    oldest: _OldestParked = {}
    if not held:
        return oldest
    pipe = client.pipeline(transaction=False)
    for (queue, g), ks in held:
        for k in ks:
            pipe.zcard(keys.parked_messages(QueueRef(topic, queue), g["group"], k))
            pipe.zrange(keys.parked_messages(QueueRef(topic, queue), g["group"], k), 0, 0)
    replies = iter(pipe.execute())
    for (queue, g), ks in held:
        g["parked_keys"] = len(ks)
        for _ in ks:
            count, first = int(next(replies)), next(replies)
            g["parked"] += count
            if first:
                produced = int(json.loads(first[0]).get("t", 0))
                cell = (queue, g["group"])
                oldest[cell] = min(oldest.get(cell, produced), produced)
        g["lag"] += g["parked"]
    return oldest


def _add_time_lag(
    client: redis.Redis,
    topic: str,
    queues: list[QueueLag],
    oldest_parked: _OldestParked,
    now_ms: int,
) -> None:
    """Time lag = now - produce time of the oldest unconsumed (or parked) message."""
    wanted = [(q["queue"], g) for q in queues for g in q["groups"] if g["lag"] > 0]
    if not wanted:
        return
    pipe = client.pipeline(transaction=False)
    for queue, g in wanted:
        pipe.xrange(
            keys.stream(QueueRef(topic, queue)), min=f"{g['committed_offset']}-0", max="+", count=1
        )
    for (queue, g), found in zip(wanted, pipe.execute(), strict=True):
        oldest = [int(found[0][1].get(b"t", b"0") or 0)] if found else []
        if (queue, g["group"]) in oldest_parked:
            oldest.append(oldest_parked[(queue, g["group"])])
        produced = min((t for t in oldest if t), default=0)
        g["time_lag_s"] = round(max(0, now_ms - produced) / 1000.0, 3) if produced else 0.0
