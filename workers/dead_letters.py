"""Operator actions on dead letters: list, replay (back to the key's place), discard.

Both actions are idempotent (a dead letter already replayed or discarded changes
nothing and returns False) and leave an audit event in the event log.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from workers import events as ev
from workers import keys
from workers.message import Message, serialize
from workers.redis_types import as_bytes, entries
from workers.refs import QueueRef
from workers.scripts import script
from workers.topics import get_topic


@dataclass(frozen=True)
class DeadLetter:
    id: str
    topic: str
    group: str
    queue: int
    offset: int
    key: str
    body: bytes
    headers: str
    produced_at_ms: int
    reconsume_times: int
    error: str
    dead_at_ms: int

    def as_message(self) -> Message:
        import json

        try:
            headers = json.loads(self.headers or "{}")
        except ValueError:
            headers = {}
        # A replayed message starts its retries afresh.
        return Message(
            self.topic,
            self.queue,
            self.offset,
            self.key,
            self.body,
            headers if isinstance(headers, dict) else {},
            self.produced_at_ms / 1000.0,
            0,
        )


def _decode(
    topic: str, group: str, queue: int, entry_id: bytes, f: dict[bytes, bytes]
) -> DeadLetter:
    def text(name: str) -> str:
        return as_bytes(f.get(name.encode(), b"")).decode("utf-8", "replace")

    def number(name: str) -> int:
        try:
            return int(text(name) or 0)
        except ValueError:
            return 0

    return DeadLetter(
        entry_id.decode(),
        topic,
        group,
        queue,
        number("offset"),
        text("key"),
        as_bytes(f.get(b"body", b"")),
        text("headers"),
        number("produced_at_ms"),
        number("reconsume_times"),
        text("error"),
        number("dead_at"),
    )


def list_dead_letters(
    client: redis.Redis, topic: str, group: str, queue: int | None = None, key: str | None = None
) -> list[DeadLetter]:
    queues = [queue] if queue is not None else range(get_topic(client, topic).queues)
    out: list[DeadLetter] = []
    for q in queues:
        for entry_id, f in entries(client.xrange(keys.dead_letters(QueueRef(topic, q), group))):
            letter = _decode(topic, group, q, entry_id, f)
            if key is None or letter.key == key:
                out.append(letter)
    return sorted(out, key=lambda d: (d.queue, d.offset))


def get_dead_letter(
    client: redis.Redis, topic: str, group: str, queue: int, dlq_id: str
) -> DeadLetter | None:
    found = entries(client.xrange(keys.dead_letters(QueueRef(topic, queue), group), dlq_id, dlq_id))
    return _decode(topic, group, queue, found[0][0], found[0][1]) if found else None


def replay(
    client: redis.Redis, topic: str, group: str, queue: int, dlq_id: str, actor: str = ""
) -> bool:
    """Put the dead letter back at its key's place; the owning consumer runs it, then the
    key's parked messages, in offset order."""
    return _release(client, topic, group, queue, dlq_id, "replay", actor)


def discard(
    client: redis.Redis, topic: str, group: str, queue: int, dlq_id: str, actor: str = ""
) -> bool:
    """Drop the dead letter; a held key is released and its parked messages run in order.
    The key stays ``releasing`` until the queue's consumer has drained (or found empty) its
    parked set, even with nothing parked."""
    return _release(client, topic, group, queue, dlq_id, "discard", actor)


def _release(
    client: redis.Redis, topic: str, group: str, queue: int, dlq_id: str, action: str, actor: str
) -> bool:
    letter = get_dead_letter(client, topic, group, queue, dlq_id)
    if letter is None:
        return False
    member = serialize(letter.as_message()) if action == "replay" else ""
    done = bool(
        script(client, "release_dead_letter")(
            keys=[
                keys.dead_letters(QueueRef(topic, queue), group),
                keys.parked_keys(QueueRef(topic, queue), group),
                keys.parked_messages(QueueRef(topic, queue), group, letter.key),
            ],
            args=[dlq_id, action, letter.key, letter.offset, member],
        )
    )
    if done:
        event = ev.Event(
            ev.DEAD_LETTER_REPLAYED if action == "replay" else ev.DEAD_LETTER_DISCARDED,
            _now_ms(client),
            topic,
            group,
            queue,
            letter.key,
            details={"dlq_id": dlq_id, "offset": letter.offset, "actor": actor},
        )
        client.xadd(keys.EVENTS, event.fields())
    return done


def _now_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000
