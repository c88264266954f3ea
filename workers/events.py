"""The durable event log: every lock, rebalance, offset, retry and dead-letter event is
appended to one Redis stream (``ls:events``) that the dashboard ingests.

Events are buffered for at most ``flush_interval`` and written with one pipelined round
trip, so the event log costs the consume loop almost nothing. Successive commits of one
queue under one fencing token within a flush window are coalesced into a single
``offset_committed`` event carrying ``from_offset``, ``offset`` and ``commits``: no
movement of an offset is lost, only the intermediate steps. A process killed with SIGKILL
loses at most the last ``flush_interval`` of events (never offsets: those are in Redis).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import redis

from workers import keys
from workers.refs import QueueRef

log = logging.getLogger(__name__)

# Event types. The dashboard relies on these names.
LOCK_ACQUIRED = "lock_acquired"
LOCK_RENEW_FAILED = "lock_renew_failed"
LOCK_LOST = "lock_lost"
LOCK_RELEASED = "lock_released"
LOCK_MARGIN_OVERRUN = "lock_margin_overrun"
REBALANCE = "rebalance"
OFFSET_COMMITTED = "offset_committed"
CONSUME_FAILED = "consume_failed"
DEAD_LETTERED = "dead_lettered"
FENCING_REJECTED = "fencing_rejected"
MALFORMED_ENTRY = "malformed_entry"
CONSUMER_STARTED = "consumer_started"
CONSUMER_STOPPED = "consumer_stopped"
HANDLER_ERROR = "handler_error"
LAG_SAMPLED = "lag_sampled"
# Key ordering.
FLOW_PAUSED = "flow_paused"
FLOW_RESUMED = "flow_resumed"
KEY_PARKED = "key_parked"
MESSAGES_PARKED = "messages_parked"
KEY_RELEASED = "key_released"
KEY_STATE = "key_state"
LANES = "lanes"
DEAD_LETTER_REPLAYED = "dead_letter_replayed"
DEAD_LETTER_DISCARDED = "dead_letter_discarded"
# A replayed dead letter was handled successfully (details: dlq_id, replay_id, offsets).
REPLAY_SUCCEEDED = "replay_succeeded"


@dataclass
class Event:
    type: str
    ts_ms: int
    topic: str = ""
    group: str = ""
    queue: int | None = None
    key: str = ""
    token: int | None = None
    consumer: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def fields(self) -> dict[Any, Any]:
        out: dict[Any, Any] = {"type": self.type, "ts": self.ts_ms}
        if self.topic:
            out["topic"] = self.topic
        if self.group:
            out["group"] = self.group
        if self.queue is not None:
            out["queue"] = self.queue
        if self.key:
            out["key"] = self.key
        if self.token is not None:
            out["token"] = self.token
        if self.consumer:
            out["consumer"] = self.consumer
        if self.details:
            out["details"] = json.dumps(self.details, separators=(",", ":"), default=str)
        return out


def decode_event(entry_id: bytes, raw: dict[bytes, bytes]) -> dict[str, Any]:
    """Turn a stream entry into a plain dict; tolerant of entries written by hand."""
    text = {k.decode(): v.decode("utf-8", "replace") for k, v in raw.items()}
    details: Any = {}
    if "details" in text:
        try:
            details = json.loads(text["details"])
        except json.JSONDecodeError:
            details = {"raw": text["details"]}
    return {
        "id": entry_id.decode(),
        "type": text.get("type", "unknown"),
        "ts_ms": _int_or_none(text.get("ts")) or 0,
        "topic": text.get("topic", ""),
        "group": text.get("group", ""),
        "queue": _int_or_none(text.get("queue")),
        "key": text.get("key", ""),
        "token": _int_or_none(text.get("token")),
        "consumer": text.get("consumer", ""),
        "details": details if isinstance(details, dict) else {"value": details},
    }


def append(client: redis.Redis, events: Iterable[Event], maxlen: int = 1_000_000) -> int:
    """Append events to the event log now, in one pipelined round trip (for writers outside
    a consumer process: beat tasks, operator actions). Returns how many were written."""
    pipe = client.pipeline(transaction=False)
    count = 0
    for event in events:
        pipe.xadd(keys.EVENTS, event.fields(), maxlen=maxlen, approximate=True)
        count += 1
    if count:
        pipe.execute()
    return count


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


class EventLog:
    """Thread-safe buffered appender to the event stream."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        enabled: bool = True,
        flush_interval: float = 0.1,
        maxlen: int = 1_000_000,
        max_buffer: int = 500,  # flush early at this many (not a cap: kept while Redis is down)
    ) -> None:
        self._client = client
        self.enabled = enabled
        self._flush_interval = flush_interval
        self._maxlen = maxlen
        self._max_buffer = max_buffer
        self._buffer: list[Event] = []
        self._commits: dict[tuple[QueueRef, str, int | None, str], Event] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="lockstep-events", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.flush()

    def emit(self, type_: str, **fields: Any) -> None:
        if not self.enabled:
            return
        details = fields.pop("details", None) or {}
        event = Event(type_, int(time.time() * 1000), details=details, **fields)
        with self._lock:
            self._buffer.append(event)
            full = len(self._buffer) >= self._max_buffer
        if full:
            self._wake.set()

    def committed(
        self,
        ref: QueueRef,
        group: str,
        token: int | None,
        consumer: str,
        offset: int,
        **details: Any,
    ) -> None:
        """Record an offset commit, coalesced with earlier ones of the same flush window."""
        if not self.enabled:
            return
        k = (ref, group, token, consumer)
        now_ms = int(time.time() * 1000)
        with self._lock:
            ev = self._commits.get(k)
            if ev is None:
                ev = Event(
                    OFFSET_COMMITTED,
                    now_ms,
                    ref.topic,
                    group,
                    ref.queue,
                    "",
                    token,
                    consumer,
                    {"from_offset": offset, "offset": offset, "commits": 0},
                )
                self._commits[k] = ev
                self._buffer.append(ev)
            ev.ts_ms = now_ms
            ev.details["offset"] = offset
            ev.details["commits"] += 1
            ev.details.update(details)

    def flush(self) -> int:
        with self._lock:
            batch, self._buffer = self._buffer, []
            self._commits = {}
        if not batch:
            return 0
        try:
            append(self._client, batch, self._maxlen)
        except redis.RedisError:
            # Keep them: put them back in front and retry at the next flush.
            log.warning("event log unavailable; keeping %d events buffered", len(batch))
            with self._lock:
                self._buffer = batch + self._buffer
            return 0
        return len(batch)

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._wake.wait(self._flush_interval)
            self._wake.clear()
            self.flush()


def default_consumer_id() -> str:
    import os
    import uuid

    return f"{socket.gethostname()}@{os.getpid()}@{uuid.uuid4().hex[:6]}"
