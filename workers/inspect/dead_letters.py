"""Dead letters waiting in each (queue, group)'s dead-letter stream. Replay and discard
(``workers.dead_letters``) delete them, so what is here is what still waits for an
operator."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

import redis

from workers import keys
from workers.inspect.lag import Overview
from workers.message import Message
from workers.redis_types import as_bytes, entries
from workers.refs import QueueRef
from workers.topics import get_topic


@dataclass(frozen=True)
class DeadLetter:
    """One entry of a dead-letter stream. Numbers a damaged entry lacks read as 0, text
    as ""."""

    id: str  # the stream entry ID: what replay and discard take
    topic: str
    group: str
    queue: int
    offset: int
    key: str
    body: bytes
    headers: str  # JSON, as the message carried them
    produced_at_ms: int
    reconsume_times: int
    error: str
    dead_at_ms: int

    @property
    def ref(self) -> QueueRef:
        return QueueRef(self.topic, self.queue)

    def as_message(self) -> Message:
        """The message as it was produced, with its retries reset (a replay starts them
        afresh); headers that are not a JSON object read as none."""
        try:
            headers = json.loads(self.headers or "{}")
        except ValueError:
            headers = {}
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


def _decode(ref: QueueRef, group: str, entry_id: bytes, f: dict[bytes, bytes]) -> DeadLetter:
    def text(name: str) -> str:
        return as_bytes(f.get(name.encode(), b"")).decode("utf-8", "replace")

    def number(name: str) -> int:
        try:
            return int(text(name) or 0)
        except ValueError:
            return 0

    return DeadLetter(
        entry_id.decode(),
        ref.topic,
        group,
        ref.queue,
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
    """The group's dead letters of ``topic`` (of one ``queue``, of one ``key``, when given),
    by queue then offset. Raises ``UnknownTopicError`` when ``queue`` is not given and the
    topic does not exist."""
    queues = [queue] if queue is not None else range(get_topic(client, topic).queues)
    out: list[DeadLetter] = []
    for q in queues:
        ref = QueueRef(topic, q)
        for entry_id, f in entries(client.xrange(keys.dead_letters(ref, group))):
            letter = _decode(ref, group, entry_id, f)
            if key is None or letter.key == key:
                out.append(letter)
    return sorted(out, key=lambda d: (d.queue, d.offset))


def get_dead_letter(
    client: redis.Redis, ref: QueueRef, group: str, dlq_id: str
) -> DeadLetter | None:
    """Dead letter ``dlq_id`` of the group on the queue; ``None`` when it is not (or no
    longer) there."""
    found = entries(client.xrange(keys.dead_letters(ref, group), dlq_id, dlq_id))
    return _decode(ref, group, found[0][0], found[0][1]) if found else None


def dead_letter_counts(
    client: redis.Redis, cells: Iterable[tuple[QueueRef, str]]
) -> dict[tuple[QueueRef, str], int]:
    """Dead letters waiting per (queue, group) of ``cells``, in one round trip."""
    wanted = list(cells)
    pipe = client.pipeline(transaction=False)
    for ref, group in wanted:
        pipe.xlen(keys.dead_letters(ref, group))
    return {cell: int(n) for cell, n in zip(wanted, pipe.execute(), strict=True)}


def dead_letters_per_queue(client: redis.Redis, topic: str, group: str) -> dict[int, int]:
    """Queue number -> dead letters waiting there for the group (every queue of the topic,
    0 included). Raises ``UnknownTopicError``."""
    refs = [QueueRef(topic, q) for q in range(get_topic(client, topic).queues)]
    counts = dead_letter_counts(client, [(ref, group) for ref in refs])
    return {ref.queue: n for (ref, _group), n in counts.items()}


def dead_letters_per_group(client: redis.Redis, snapshot: Overview) -> dict[tuple[str, str], int]:
    """(topic, group) -> dead letters waiting over all its queues, for every topic and group
    of ``snapshot`` (``overview``), so the counts cover what the snapshot shows."""
    counts = dead_letter_counts(
        client,
        [
            (QueueRef(t["name"], q["queue"]), group)
            for t in snapshot["topics"]
            for q in t["queues"]
            for group in t["groups"]
        ],
    )
    totals: dict[tuple[str, str], int] = {}
    for (ref, group), n in counts.items():
        totals[(ref.topic, group)] = totals.get((ref.topic, group), 0) + n
    return totals
