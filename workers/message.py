"""What a handler receives and returns."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypedDict

from lockstep.workers.refs import QueueRef


def clamp_suspend(seconds: float) -> float:
    """RocketMQ clamps suspendCurrentQueueTimeMillis to 10 ms .. 30 s."""
    return min(max(seconds, 0.01), 30.0)


# Headers a replayed message carries, linking it to its dead letter (docs/semantics.md).
REPLAY_OF_HEADER = "lockstep-replay-of"  # the dead letter's entry ID
REPLAY_ID_HEADER = "lockstep-replay-id"  # the operator's request ID
ORIGINAL_OFFSET_HEADER = "lockstep-original-offset"
# The caller's idempotency key: a send repeating it stores nothing (workers/producer.py).
IDEMPOTENCY_KEY_HEADER = "lockstep-idempotency-key"


class FailedAttempt(TypedDict):
    """One failed attempt at a message, as its dead letter records it."""

    at_ms: int  # when the attempt ended (consumer clock)
    error: str  # one line: the exception, or what the handler returned
    traceback: str  # "" when the handler returned a suspend instead of raising


# A dead letter keeps this many of its message's last attempts: the story of a poison
# message without an unbounded record per retry.
MAX_RECORDED_ATTEMPTS = 10


class ConsumeStatus(StrEnum):
    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


@dataclass
class Message:
    topic: str
    queue: int
    offset: int
    key: str
    body: bytes
    headers: dict[str, Any]
    produced_at: float  # seconds since the epoch, Redis clock at append time
    reconsume_times: int = 0

    @property
    def ref(self) -> QueueRef:
        return QueueRef(self.topic, self.queue)


@dataclass
class ConsumeContext:
    """Passed to the handler with each batch. ``suspend_ms`` may be set by the handler to
    choose how long the queue pauses if this attempt suspends (clamped to 10 ms .. 30 s)."""

    topic: str
    group: str
    queue: int
    consumer_id: str
    token: int
    suspend_ms: int
    attrs: dict[str, Any] = field(default_factory=dict)

    def set_suspend_ms(self, ms: int) -> None:
        self.suspend_ms = int(ms)

    @property
    def suspend_seconds(self) -> float:
        return clamp_suspend(self.suspend_ms / 1000.0)


Handler = Callable[[Sequence[Message], ConsumeContext], ConsumeStatus]


class MalformedEntry(Exception):
    """A stream entry that cannot be decoded into a Message.

    ``foreign``: the entry was not written by a producer (its ID is not ``<offset>-1``, or
    its offset was never handed out by the queue's sequence), so it holds no place in the
    queue's order: its offset may be a real message's, and dead-lettering it must not
    count that offset as done."""

    def __init__(self, offset: int, reason: str, raw: dict[bytes, bytes], *, foreign: bool = False):
        super().__init__(reason)
        self.offset = offset
        self.reason = reason
        self.raw = raw
        self.foreign = foreign


def parse_offset(entry_id: bytes | str) -> int:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.split("-", 1)[0])


def foreign_entry(entry_id: bytes, fields: dict[bytes, bytes], why: str) -> MalformedEntry:
    """An entry some other writer put in a queue's stream (see ``MalformedEntry``)."""
    reason = f"entry ID {entry_id.decode(errors='replace')} {why}: not written by a producer"
    return MalformedEntry(parse_offset(entry_id), reason, fields, foreign=True)


def decode_entry(ref: QueueRef, entry_id: bytes, fields: dict[bytes, bytes]) -> Message:
    """Decode a stream entry; raise ``MalformedEntry`` with the reason when it is not ours."""
    offset = parse_offset(entry_id)
    if not entry_id.endswith(b"-1"):  # produce.lua writes "<offset>-1", nothing else
        raise foreign_entry(entry_id, fields, "is not <offset>-1")
    try:
        key = fields[b"k"].decode("utf-8")
        body = fields[b"b"]
        raw_headers = fields.get(b"h", b"{}") or b"{}"
        # Most messages have no headers: skip the JSON parser for them (hot path).
        headers = {} if raw_headers == b"{}" else json.loads(raw_headers)
        produced_at = int(fields[b"t"]) / 1000.0
    except KeyError as exc:
        raise MalformedEntry(offset, f"missing field {exc.args[0]!r}", fields) from None
    except (ValueError, RecursionError, OverflowError) as exc:
        # ValueError covers bad UTF-8 and bad JSON; deeply nested JSON exhausts the
        # parser's stack and a huge time overflows a float: all bytes nobody produced.
        raise MalformedEntry(offset, f"undecodable entry: {describe_error(exc)}", fields) from None
    if not isinstance(headers, dict):
        raise MalformedEntry(offset, "headers are not a JSON object", fields)
    return Message(ref.topic, ref.queue, offset, key, body, headers, produced_at)


def describe_error(exc: Exception) -> str:
    """``exc`` in one bounded line: a reason that may quote the entry's bytes."""
    return f"{type(exc).__name__}: {exc}"[:300]


def serialize(message: Message) -> str:
    """A self-contained copy of a message (parked messages outlive stream trimming)."""
    return json.dumps(
        {
            "o": message.offset,
            "k": message.key,
            "b": base64.b64encode(message.body).decode("ascii"),
            "h": message.headers,
            "t": int(message.produced_at * 1000),
            "r": message.reconsume_times,
        },
        separators=(",", ":"),
        sort_keys=True,
        default=str,
    )


def deserialize(ref: QueueRef, text: str) -> Message:
    data = json.loads(text)
    return Message(
        ref.topic,
        ref.queue,
        int(data["o"]),
        str(data["k"]),
        base64.b64decode(data["b"]),
        dict(data.get("h") or {}),
        int(data.get("t", 0)) / 1000.0,
        int(data.get("r", 0)),
    )
