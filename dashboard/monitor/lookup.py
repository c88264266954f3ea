"""Message lookup: find messages by key or by (queue, offset) and say, per consumer group,
where each one is. Reads Redis only (the runtime's truth); histories come from
``queries``.

States, per group, first match wins:
- ``dead_lettered``: in the group's dead-letter stream;
- ``parked``: in its held key's parked set (``after_dlq = hold``, or a replay waiting);
- ``retrying``: the message the group's consumer is retrying (queue ordering: the queue's
  head at the committed offset; key ordering: the offset its blocked key is stuck at);
- ``handled``: below the committed offset (low-water mark) or in a completed range above;
- ``pending``: not handled yet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import redis

from workers.broker import Broker
from workers.dead_letters import DeadLetter, list_dead_letters
from workers.hashing import queue_for_key
from workers.inspect import queue_state
from workers.message import MalformedEntry, Message, decode_entry, deserialize
from workers.offset_tracker import decode_ranges
from workers.topics import get_topic, groups_of

# A key lookup reads at most this many of the newest entries of the key's queue: enough
# for every message of a key that is still moving, without reading a million-entry stream
# on a click. Dead letters and parked messages of the key are found whatever their age.
KEY_SCAN_ENTRIES = 10_000
BODY_PREVIEW_BYTES = 500


class MessageNotFound(LookupError):
    """No message at that (queue, offset), nor a dead letter or parked copy of it."""


@dataclass
class Found:
    """One message as found, with the copies the groups hold of it."""

    message: Message
    dead: dict[str, DeadLetter] = field(default_factory=dict)  # group -> its dead letter


def by_key(client: redis.Redis, topic: str, key: str, limit: int = 50) -> dict[str, Any]:
    """Every message of ``key`` in its queue (newest ``limit``; the stream scan is bounded by
    ``KEY_SCAN_ENTRIES``), oldest first, each with its per-group states."""
    queue = queue_for_key(key, get_topic(client, topic).queues)
    broker = Broker(client)
    top = broker.max_offset(topic, queue)
    start = max(0, top - KEY_SCAN_ENTRIES)
    found: dict[int, Found] = {}
    for entry_id, fields in broker.read_from(topic, queue, start, KEY_SCAN_ENTRIES):
        message = _decode(topic, queue, entry_id, fields)
        if message is not None and message.key == key:
            found[message.offset] = Found(message)
    groups = groups_of(client, topic)
    _add_dead_and_parked(client, topic, queue, key, groups, found)
    chosen = dict(sorted(found.items())[-limit:])
    return {
        "topic": topic,
        "queue": queue,
        "key": key,
        "max_offset": top,
        "scanned_from": start,
        "messages": _describe(client, topic, queue, groups, chosen),
    }


def by_offset(client: redis.Redis, topic: str, queue: int, offset: int) -> dict[str, Any]:
    """The message at (``queue``, ``offset``) with its per-group states. Raises
    ``UnknownTopicError``, ``ValueError`` (no such queue) or ``MessageNotFound``."""
    count = get_topic(client, topic).queues
    if not 0 <= queue < count:
        raise ValueError(f"topic {topic!r} has no queue {queue} (0..{count - 1})")
    broker = Broker(client)
    found: dict[int, Found] = {}
    for entry_id, fields in broker.read_from(topic, queue, offset, 1):
        message = _decode(topic, queue, entry_id, fields)
        if message is not None and message.offset == offset:
            found[offset] = Found(message)
    groups = groups_of(client, topic)
    key = found[offset].message.key if offset in found else None
    _add_dead_and_parked(client, topic, queue, key, groups, found, only=offset)
    if offset not in found:
        raise MessageNotFound(
            f"no message at offset {offset} of {topic} queue {queue} "
            f"(max offset {broker.max_offset(topic, queue)})"
        )
    return {
        "topic": topic,
        "queue": queue,
        "key": found[offset].message.key,
        "offset": offset,
        "max_offset": broker.max_offset(topic, queue),
        "messages": _describe(client, topic, queue, groups, found),
    }


def _decode(topic: str, queue: int, entry_id: bytes, fields: dict[bytes, bytes]) -> Message | None:
    try:
        return decode_entry(topic, queue, entry_id, fields)
    except (MalformedEntry, ValueError):
        return None


def _add_dead_and_parked(
    client: redis.Redis,
    topic: str,
    queue: int,
    key: str | None,
    groups: list[str],
    found: dict[int, Found],
    only: int | None = None,
) -> None:
    """Dead letters and parked copies outlive a trimmed stream: add the ones of ``key``
    (all keys when ``None``; only offset ``only`` when given) to ``found``."""
    broker = Broker(client)
    for group in groups:
        for letter in list_dead_letters(client, topic, group, queue=queue, key=key):
            if only is None or letter.offset == only:
                found.setdefault(letter.offset, Found(letter.as_message())).dead[group] = letter
        held = [key] if key is not None else list(broker.parked_keys(topic, group, queue))
        for k in held:
            for member in broker.parked_messages(topic, group, queue, k):
                message = deserialize(topic, queue, member)
                if only is None or message.offset == only:
                    found.setdefault(message.offset, Found(message))


@dataclass
class GroupView:
    """What one group's state says about offsets of one queue."""

    group: str
    live: dict[str, Any]  # the group's entry of ``queue_state``
    completed: list[tuple[int, int]]
    parked: dict[int, dict[str, Any]]  # offset -> its held key's state

    def state_of(self, found: Found) -> dict[str, Any]:
        m, g = found.message, self.live
        letter = found.dead.get(self.group)
        if letter is not None:
            return {
                "group": self.group,
                "state": "dead_lettered",
                "dlq_id": letter.id,
                "error": letter.error,
                "reconsume_times": letter.reconsume_times,
                "dead_at_ms": letter.dead_at_ms,
            }
        if m.offset in self.parked:
            hold = self.parked[m.offset]
            return {
                "group": self.group,
                "state": "parked",
                "hold": hold.get("state", "held"),
                "blocked_by_offset": hold.get("offset"),
                "dlq_id": hold.get("dlq_id"),
            }
        retrying = self._retrying(m)
        if retrying is not None:
            return {"group": self.group, "state": "retrying", **retrying}
        if m.offset < g["committed_offset"] or any(a <= m.offset <= b for a, b in self.completed):
            return {"group": self.group, "state": "handled"}
        return {
            "group": self.group,
            "state": "pending",
            "ahead": max(0, m.offset - g["committed_offset"]),
        }

    def _retrying(self, m: Message) -> dict[str, Any] | None:
        g = self.live
        for b in g.get("blocked_keys") or []:
            if b.get("key") == m.key and b.get("offset") == m.offset:
                return {
                    "retries": b.get("retries", 0),
                    "error": b.get("error", ""),
                    "since_ms": int(float(b.get("since", 0)) * 1000),
                    "waiting": b.get("waiting", 0),
                }
        queue_head = "blocked_keys" not in g and m.offset == g["committed_offset"]
        if queue_head and g.get("retries", 0) > 0:
            return {"retries": g["retries"], "error": g.get("last_error", "")}
        return None


def _group_views(client: redis.Redis, topic: str, queue: int, groups: list[str]) -> list[GroupView]:
    live = {g["group"]: g for g in queue_state(client, topic, queue)["groups"]}
    broker = Broker(client)
    views = []
    for group in groups:
        stored = broker.read_offset(topic, group, queue)
        parked: dict[int, dict[str, Any]] = {}
        for key, hold in broker.parked_keys(topic, group, queue).items():
            for member in broker.parked_messages(topic, group, queue, key):
                parked[int(json.loads(member)["o"])] = hold
        views.append(GroupView(group, live[group], decode_ranges(stored.completed), parked))
    return views


def _describe(
    client: redis.Redis, topic: str, queue: int, groups: list[str], found: dict[int, Found]
) -> list[dict[str, Any]]:
    views = _group_views(client, topic, queue, groups) if found else []
    return [
        {
            "queue": queue,
            "offset": f.message.offset,
            "key": f.message.key,
            "produced_at_ms": int(f.message.produced_at * 1000),
            "headers": f.message.headers,
            "size": len(f.message.body),
            "body_preview": f.message.body[:BODY_PREVIEW_BYTES].decode("utf-8", "replace"),
            "states": [view.state_of(f) for view in views],
        }
        for _, f in sorted(found.items())
    ]
