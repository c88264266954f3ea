"""The durable event log: every lock, rebalance, offset, retry and dead-letter event is
appended to one Redis stream (``ls:events``) that the dashboard ingests.

Events are buffered for at most ``flush_interval`` and written with one pipelined round
trip, so the event log costs the consume loop almost nothing. Offset commits are recorded
as at most one ``offset_committed`` event per (queue, group) per commit-event interval
(``LOCKSTEP_COMMIT_EVENT_INTERVAL``), carrying ``from_offset``, ``offset`` and
``commits``: no movement of an offset is lost, only the intermediate steps. A process
killed with SIGKILL loses at most the last ``flush_interval`` of events and the commits
still pending in their interval (never offsets: those are in Redis).
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
from workers.config import commit_event_interval_from_env
from workers.outage import REDIS_DOWN, redis_outage
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
# A worker stops committing on its queue after these: a commit still pending in its
# interval is written before them, so the stream shows the last position first.
OWNERSHIP_ENDS = frozenset({LOCK_RELEASED, LOCK_LOST, LOCK_RENEW_FAILED, FENCING_REJECTED})


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


@dataclass
class _CommitWindow:
    """The commit-event interval of one (queue, group): it ends at ``ends_at`` (monotonic
    seconds); ``pending`` coalesces the commits made since its event was last written,
    all by ``owner`` (token, consumer)."""

    ends_at: float
    owner: tuple[int | None, str]
    pending: Event | None = None

    def add(self, event: Event, offset: int, details: dict[str, Any]) -> None:
        """Coalesce one more commit (``event`` is its own, used when none is pending)."""
        if self.pending is None:
            self.pending = event
            return
        self.pending.ts_ms = event.ts_ms
        self.pending.details["offset"] = offset
        self.pending.details["commits"] += 1
        self.pending.details.update(details)


def _commit_event(
    ref: QueueRef,
    group: str,
    token: int | None,
    consumer: str,
    offset: int,
    details: dict[str, Any],
) -> Event:
    return Event(
        OFFSET_COMMITTED,
        int(time.time() * 1000),
        ref.topic,
        group,
        ref.queue,
        "",
        token,
        consumer,
        {"from_offset": offset, "offset": offset, "commits": 1, **details},
    )


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
        commit_event_interval: float | None = None,  # None: LOCKSTEP_COMMIT_EVENT_INTERVAL
    ) -> None:
        self._client = client
        self.enabled = enabled
        self._flush_interval = flush_interval
        self._maxlen = maxlen
        self._max_buffer = max_buffer
        self._buffer: list[Event] = []
        self._commit_interval = (
            commit_event_interval_from_env()
            if commit_event_interval is None
            else commit_event_interval
        )
        self._windows: dict[tuple[QueueRef, str], _CommitWindow] = {}
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
        with self._lock:  # the last position of every queue goes out with this flush
            for window in list(self._windows):
                self._end_window(window)
        self.flush()

    def emit(self, type_: str, **fields: Any) -> None:
        if not self.enabled:
            return
        details = fields.pop("details", None) or {}
        event = Event(type_, int(time.time() * 1000), details=details, **fields)
        with self._lock:
            if type_ in OWNERSHIP_ENDS and event.queue is not None:
                self._end_window((QueueRef(event.topic, event.queue), event.group))
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
        """Record an offset commit: at most one ``offset_committed`` event per (queue,
        group) per commit-event interval. The first commit after a quiet interval is
        written at the next flush; later ones are coalesced (``from_offset`` the first
        one's offset, ``offset`` the last, ``commits`` how many, ``ts`` the last one's
        time) and written when the interval ends, when the token or consumer changes,
        before the queue's lock is released or lost, and on ``stop``."""
        if not self.enabled:
            return
        event = _commit_event(ref, group, token, consumer, offset, details)
        k, now = (ref, group), time.monotonic()
        with self._lock:
            window = self._windows.get(k)
            if window is not None and window.owner != (token, consumer):
                self._end_window(k)  # a new owner: the old one's last position goes first
                window = None
            if window is not None and now >= window.ends_at:
                window = self._roll_window(k, now)
            if window is None:
                self._buffer.append(event)
                self._windows[k] = _CommitWindow(now + self._commit_interval, (token, consumer))
            else:
                window.add(event, offset, details)

    def _end_window(self, k: tuple[QueueRef, str]) -> None:
        """Write ``k``'s pending commit now and forget its interval (caller holds the lock)."""
        window = self._windows.pop(k, None)
        if window is not None and window.pending is not None:
            self._buffer.append(window.pending)

    def _roll_window(self, k: tuple[QueueRef, str], now: float) -> _CommitWindow | None:
        """End ``k``'s interval (caller holds the lock). When a commit was pending it is
        written and a new interval starts now, so events stay an interval apart; else
        the queue was quiet and its next commit is written at once (returns None)."""
        window = self._windows.pop(k)
        if window.pending is None:
            return None
        self._buffer.append(window.pending)
        fresh = _CommitWindow(now + self._commit_interval, window.owner)
        self._windows[k] = fresh
        return fresh

    def _roll_due_windows(self, now: float) -> None:
        """Write the pending commits whose interval has ended (caller holds the lock)."""
        for k, window in list(self._windows.items()):
            if now >= window.ends_at:
                self._roll_window(k, now)

    def flush(self) -> int:
        with self._lock:
            self._roll_due_windows(time.monotonic())
            batch, self._buffer = self._buffer, []
        if not batch:
            return 0
        try:
            append(self._client, batch, self._maxlen)
        except redis.RedisError as exc:
            # Keep them: put them back in front and retry at the next flush. An outage is
            # told once (workers.outage); anything else each time.
            if isinstance(exc, REDIS_DOWN):
                redis_outage.failed(exc, "the event log")
            else:
                log.warning("event log unavailable (%s); keeping %d events", exc, len(batch))
            with self._lock:
                self._buffer = batch + self._buffer
            return 0
        redis_outage.ok()
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
