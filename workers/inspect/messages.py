"""Message lookup: a key's messages, or the message at (queue, offset), each with where it
is for every consumer group (``message_states``).

Dead letters and parked copies outlive a trimmed stream, so they are found whatever their
age; the stream itself is read only near the offsets asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

import redis

from lockstep.workers import keys
from lockstep.workers.hashing import queue_for_key
from lockstep.workers.inspect.dead_letters import DeadLetter, list_dead_letters
from lockstep.workers.inspect.held import holds, parked_messages
from lockstep.workers.inspect.message_states import MessageState, group_offsets
from lockstep.workers.message import MalformedEntry, Message, decode_entry
from lockstep.workers.redis_types import Entry, entries
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import get_topic, groups_of

# A key lookup reads at most this many of the newest entries of the key's queue: enough
# for every message of a key that is still moving, without reading a million-entry stream
# on a click. Dead letters and parked messages of the key are found whatever their age.
KEY_SCAN_ENTRIES = 10_000
# Enough of a body to recognise it on a page; the lookup shows the size of the rest.
BODY_PREVIEW_BYTES = 500


class MessageNotFound(LookupError):
    """No message at that (queue, offset), nor a dead letter or parked copy of it."""


class MessageView(TypedDict):
    queue: int
    offset: int
    key: str
    produced_at_ms: int
    headers: dict[str, Any]
    size: int  # body bytes
    body_preview: str  # the first BODY_PREVIEW_BYTES, decoded as UTF-8 (errors replaced)
    states: list[MessageState]  # one per group of the topic, sorted by group


class KeyLookup(TypedDict):
    topic: str
    queue: int
    key: str
    max_offset: int
    scanned_from: int  # the first offset of the stream that was read
    messages: list[MessageView]  # oldest first


class OffsetLookup(TypedDict):
    topic: str
    queue: int
    key: str
    offset: int
    max_offset: int
    messages: list[MessageView]  # the one message


@dataclass
class _Found:
    """One message as found, with the copies the groups hold of it."""

    message: Message
    dead: dict[str, DeadLetter] = field(default_factory=dict)  # group -> its dead letter


def messages_by_key(client: redis.Redis, topic: str, key: str, limit: int = 50) -> KeyLookup:
    """Every message of ``key`` in its queue: the newest ``limit`` among the queue's newest
    ``KEY_SCAN_ENTRIES`` entries, plus its dead letters and parked copies. Raises
    ``UnknownTopicError``."""
    ref = QueueRef(topic, queue_for_key(key, get_topic(client, topic).queues))
    top = max_offset(client, ref)
    start = max(0, top - KEY_SCAN_ENTRIES)
    found: dict[int, _Found] = {}
    for message in _decoded(ref, _read(client, ref, start, KEY_SCAN_ENTRIES)):
        if message.key == key:
            found[message.offset] = _Found(message)
    groups = groups_of(client, topic)
    _add_dead_and_parked(client, ref, key, groups, found)
    chosen = dict(sorted(found.items())[-limit:])
    return {
        "topic": topic,
        "queue": ref.queue,
        "key": key,
        "max_offset": top,
        "scanned_from": start,
        "messages": _describe(client, ref, groups, chosen),
    }


def message_at(client: redis.Redis, ref: QueueRef, offset: int) -> OffsetLookup:
    """The message at ``offset`` of the queue, from the stream or, once trimmed, from a
    dead letter or parked copy. Raises ``UnknownTopicError``, ``ValueError`` (no such
    queue) or ``MessageNotFound``."""
    count = get_topic(client, ref.topic).queues
    if not 0 <= ref.queue < count:
        raise ValueError(f"topic {ref.topic!r} has no queue {ref.queue} (0..{count - 1})")
    found = {m.offset: _Found(m) for m in _decoded(ref, _read(client, ref, offset, 1))}
    found = {o: f for o, f in found.items() if o == offset}
    groups = groups_of(client, ref.topic)
    key = found[offset].message.key if offset in found else None
    _add_dead_and_parked(client, ref, key, groups, found, only=offset)
    top = max_offset(client, ref)
    if offset not in found:
        raise MessageNotFound(
            f"no message at offset {offset} of {ref.topic} queue {ref.queue} (max offset {top})"
        )
    return {
        "topic": ref.topic,
        "queue": ref.queue,
        "key": found[offset].message.key,
        "offset": offset,
        "max_offset": top,
        "messages": _describe(client, ref, groups, found),
    }


def key_at(client: redis.Redis, ref: QueueRef, offset: int) -> str:
    """The key of the message at ``offset`` of the queue's stream; "" when there is none
    (trimmed, not produced yet) or the entry is malformed."""
    return keys_at(client, [(ref, offset)])[(ref, offset)]


def keys_at(
    client: redis.Redis, wanted: Iterable[tuple[QueueRef, int]]
) -> dict[tuple[QueueRef, int], str]:
    """``key_at`` for each (queue, offset) of ``wanted``, in one pipelined round trip."""
    asked = list(dict.fromkeys(wanted))
    replies = stream_ranges(client, [StreamRange(ref, offset, offset + 1) for ref, offset in asked])
    found = {}
    for at, reply in zip(asked, replies, strict=True):
        decoded = _decoded(at[0], reply)
        found[at] = decoded[0].key if decoded and decoded[0].offset == at[1] else ""
    return found


@dataclass(frozen=True)
class StreamRange:
    """The entries of a queue's stream with offsets from ``start`` up to ``end``
    (excluded; ``None``: the newest), at most ``count`` of them (``None``: all)."""

    ref: QueueRef
    start: int
    end: int | None = None
    count: int | None = None


def stream_ranges(client: redis.Redis, ranges: Sequence[StreamRange]) -> list[list[Entry]]:
    """The raw entries of each range, oldest first, in one pipelined round trip (on a
    cluster, one per node holding them). An entry is returned as stored, malformed or
    not: ``message.decode_entry`` tells."""
    if not ranges:
        return []
    pipe = client.pipeline(transaction=False)
    for r in ranges:
        end = "+" if r.end is None else f"({r.end}-0"
        pipe.xrange(keys.stream(r.ref), min=f"{r.start}-0", max=end, count=r.count)
    return [entries(reply) for reply in pipe.execute()]


def max_offset(client: redis.Redis, ref: QueueRef) -> int:
    """The next offset to be produced on the queue."""
    raw = client.get(keys.sequence(ref))
    return int(raw) if raw else 0


def _read(client: redis.Redis, ref: QueueRef, offset: int, count: int) -> list[Entry]:
    """Up to ``count`` stream entries from ``offset`` on, oldest first."""
    return entries(client.xrange(keys.stream(ref), min=f"{offset}-0", max="+", count=count))


def _decoded(ref: QueueRef, found: list[Entry]) -> list[Message]:
    """The entries that decode as messages (a malformed entry is not a message)."""
    out = []
    for entry_id, fields in found:
        try:
            out.append(decode_entry(ref, entry_id, fields))
        except (MalformedEntry, ValueError):
            continue
    return out


def _add_dead_and_parked(
    client: redis.Redis,
    ref: QueueRef,
    key: str | None,
    groups: list[str],
    found: dict[int, _Found],
    only: int | None = None,
) -> None:
    """Add the dead letters and parked copies of ``key`` (all keys when ``None``; only
    offset ``only`` when given) to ``found``."""
    for group in groups:
        for letter in list_dead_letters(client, ref.topic, group, queue=ref.queue, key=key):
            if only is None or letter.offset == only:
                found.setdefault(letter.offset, _Found(letter.as_message())).dead[group] = letter
        held = [key] if key is not None else list(holds(client, ref, group))
        for k in held:
            for message in parked_messages(client, ref, group, k):
                if only is None or message.offset == only:
                    found.setdefault(message.offset, _Found(message))


def _describe(
    client: redis.Redis, ref: QueueRef, groups: list[str], found: dict[int, _Found]
) -> list[MessageView]:
    views = group_offsets(client, ref, groups) if found else []
    return [
        {
            "queue": ref.queue,
            "offset": f.message.offset,
            "key": f.message.key,
            "produced_at_ms": int(f.message.produced_at * 1000),
            "headers": f.message.headers,
            "size": len(f.message.body),
            "body_preview": f.message.body[:BODY_PREVIEW_BYTES].decode("utf-8", "replace"),
            "states": [view.state_of(f.message, f.dead.get(view.group)) for view in views],
        }
        for _, f in sorted(found.items())
    ]
