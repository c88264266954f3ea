"""Dead letters waiting in each (queue, group)'s dead-letter stream. Replay and discard
(``workers.dead_letters``) delete them, so what is here is what still waits for an
operator."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from lockstep.workers import keys
from lockstep.workers.inspect.lag import Overview
from lockstep.workers.message import REPLAY_OF_HEADER, FailedAttempt, Message
from lockstep.workers.redis_types import as_bytes, entries
from lockstep.workers.refs import GroupQueue, QueueRef
from lockstep.workers.topics import get_topic, groups_of, list_topics


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
    ordering: str = ""  # the subscription's: "queue" or "key" ("" from older entries)
    after_dlq: str = ""  # "continue" or "hold" under key ordering
    attempts: tuple[FailedAttempt, ...] = ()  # the last attempts, oldest first

    @property
    def ref(self) -> QueueRef:
        return QueueRef(self.topic, self.queue)

    @property
    def headers_dict(self) -> dict[str, Any]:
        """The headers as a mapping; headers that are not a JSON object read as none."""
        try:
            headers = json.loads(self.headers or "{}")
        except ValueError:
            return {}
        return headers if isinstance(headers, dict) else {}

    @property
    def replay_of(self) -> str:
        """The dead letter this message was a replay of ("" when it was not a replay)."""
        return str(self.headers_dict.get(REPLAY_OF_HEADER, ""))

    def as_message(self) -> Message:
        """The message as it was produced, with its retries reset (a replay starts them
        afresh); headers that are not a JSON object read as none."""
        return Message(
            self.topic,
            self.queue,
            self.offset,
            self.key,
            self.body,
            self.headers_dict,
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
        text("ordering"),
        text("after_dlq"),
        _attempts(text("attempts")),
    )


def _attempts(raw: str) -> tuple[FailedAttempt, ...]:
    """The recorded attempts; a damaged or missing record reads as none."""
    try:
        data = json.loads(raw or "[]")
    except ValueError:
        return ()
    if not isinstance(data, list):
        return ()
    return tuple(
        FailedAttempt(
            at_ms=int(a.get("at_ms", 0) or 0),
            error=str(a.get("error", "")),
            traceback=str(a.get("traceback", "")),
        )
        for a in data
        if isinstance(a, dict)
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


def read_dead_letters(
    client: redis.Redis, ref: QueueRef, group: str, after_id: str = "0-0", count: int = 500
) -> list[DeadLetter]:
    """Up to ``count`` dead letters of the group on the queue with an entry ID after
    ``after_id``, oldest first: what a reader that keeps a cursor per stream asks for."""
    raw = client.xrange(keys.dead_letters(ref, group), f"({after_id}", "+", count=count)
    return [_decode(ref, group, entry_id, f) for entry_id, f in entries(raw)]


def dead_letter_streams(client: redis.Redis) -> list[tuple[QueueRef, str]]:
    """Every (queue, group) that may hold dead letters: each queue of each topic, for
    each group that ever subscribed to it."""
    return [
        (QueueRef(topic.name, q), group)
        for topic in list_topics(client)
        for group in groups_of(client, topic.name)
        for q in range(topic.queues)
    ]


# Streams asked per pipelined round trip by ``newest_dead_letter_ids``.
NEWEST_CHUNK = 1_000


def newest_dead_letter_ids(
    client: redis.Redis, wanted: Sequence[tuple[QueueRef, str]]
) -> list[str | None]:
    """For each (queue, group) of ``wanted``, in order: the entry ID of its newest dead
    letter, ``None`` when it has none; one pipelined round trip per ``NEWEST_CHUNK``. A
    reader that keeps a cursor per stream reads only the streams with an ID past it,
    instead of a round trip for every (queue, group) of the fleet."""
    out: list[str | None] = []
    for start in range(0, len(wanted), NEWEST_CHUNK):
        pipe = client.pipeline(transaction=False)
        for ref, group in wanted[start : start + NEWEST_CHUNK]:
            pipe.xrevrange(keys.dead_letters(ref, group), "+", "-", count=1)
        for reply in pipe.execute():
            found = entries(reply)
            out.append(as_bytes(found[0][0]).decode() if found else None)
    return out


def get_dead_letter(
    client: redis.Redis, ref: QueueRef, group: str, dlq_id: str
) -> DeadLetter | None:
    """Dead letter ``dlq_id`` of the group on the queue; ``None`` when it is not (or no
    longer) there."""
    found = entries(client.xrange(keys.dead_letters(ref, group), dlq_id, dlq_id))
    return _decode(ref, group, found[0][0], found[0][1]) if found else None


def dead_letters_present(
    client: redis.Redis, wanted: Sequence[tuple[QueueRef, str, str]]
) -> list[bool]:
    """For each ``(queue, group, dlq_id)`` of ``wanted``, in order: whether that dead
    letter is still in its stream, in one round trip."""
    pipe = client.pipeline(transaction=False)
    for ref, group, dlq_id in wanted:
        pipe.xrange(keys.dead_letters(ref, group), dlq_id, dlq_id)
    return [bool(found) for found in pipe.execute()]


def dead_letter_counts(client: redis.Redis, cells: Iterable[GroupQueue]) -> dict[GroupQueue, int]:
    """Dead letters waiting per group and queue of ``cells``, in one round trip."""
    wanted = list(cells)
    pipe = client.pipeline(transaction=False)
    for cell in wanted:
        pipe.xlen(keys.dead_letters(cell.ref, cell.group))
    return {cell: int(n) for cell, n in zip(wanted, pipe.execute(), strict=True)}


def dead_letters_per_queue(client: redis.Redis, topic: str, group: str) -> dict[int, int]:
    """Queue number -> dead letters waiting there for the group (every queue of the topic,
    0 included). Raises ``UnknownTopicError``."""
    refs = [QueueRef(topic, q) for q in range(get_topic(client, topic).queues)]
    counts = dead_letter_counts(client, [GroupQueue(ref, group) for ref in refs])
    return {cell.queue: n for cell, n in counts.items()}


def dead_letters_per_group(client: redis.Redis, snapshot: Overview) -> dict[tuple[str, str], int]:
    """(topic, group) -> dead letters waiting over all its queues, for every topic and group
    of ``snapshot`` (``overview``), so the counts cover what the snapshot shows."""
    counts = dead_letter_counts(
        client,
        [
            GroupQueue(QueueRef(t["name"], q["queue"]), group)
            for t in snapshot["topics"]
            for q in t["queues"]
            for group in t["groups"]
        ],
    )
    totals: dict[tuple[str, str], int] = {}
    for cell, n in counts.items():
        totals[(cell.topic, cell.group)] = totals.get((cell.topic, cell.group), 0) + n
    return totals
