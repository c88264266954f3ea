"""The durable event log: every lock, rebalance, offset, retry and dead-letter event is
appended to a Redis stream that the dashboard ingests.

**Shards.** ``LOCKSTEP_EVENT_SHARDS`` (default 1) streams share the events. With 1 they
all go to ``ls:events`` (the layout before sharding, so an existing deployment keeps its
stream and the ingester its cursor). With N > 1 they go to ``ls:events:{s0}`` …
``ls:events:{s<N-1>}``, one hash tag per shard so that Redis Cluster spreads them over
slots. An event's shard is ``crc32`` of ``<topic>:<queue>`` modulo N (``shard_of``), so
every event of one queue is in one stream, in the order written; an event that names no
queue goes by its topic (a group's ``rebalance``), or by its consumer when it names no
topic either (``consumer_started``/``consumer_stopped``). Events of different queues are
in no defined order relative to each other. Every write of a shard also adds the shard's
name to the set ``ls:events:streams``, before the entries, so readers find every shard
ever written even when their own setting differs (``event_streams``). Writes are single
-key commands in a non-transactional pipeline (on a cluster one per node, the set's
first: ``connection.execute_per_node``): never a cross-slot command.

Events are buffered for at most ``flush_interval`` and written with one pipelined round
trip (one per node on a cluster), so the event log costs the consume loop almost nothing.
Offset commits are recorded as at most one ``offset_committed`` event per (queue, group)
per commit-event interval (``LOCKSTEP_COMMIT_EVENT_INTERVAL``), carrying
``from_offset``, ``offset`` and ``commits``: no movement of an offset is lost, only the
intermediate steps. A process killed with SIGKILL loses at most the last
``flush_interval`` of events and the commits still pending in their interval (never
offsets: those are in Redis).
"""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import redis

from lockstep.workers import keys
from lockstep.workers.config import commit_event_interval_from_env
from lockstep.workers.connection import Keyed, execute_per_node
from lockstep.workers.env import env_int
from lockstep.workers.outage import REDIS_DOWN, redis_outage
from lockstep.workers.redis_types import Entry, entries, entry_id_order
from lockstep.workers.refs import QueueRef

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


def event_shards_from_env() -> int:
    """``LOCKSTEP_EVENT_SHARDS``: how many streams the event log is spread over (≥ 1)."""
    return env_int("LOCKSTEP_EVENT_SHARDS", 1, minimum=1)


def shard_streams(shards: int) -> list[str]:
    """The streams events are written to with ``shards`` shards, shard 0 first."""
    if shards <= 1:
        return [keys.EVENTS]
    return [keys.event_shard(i) for i in range(shards)]


def shard_of(event: Event, shards: int) -> int:
    """The shard of ``event``: by (topic, queue), else by topic, else by consumer. A stable
    hash (crc32), the same in every process and every Python version."""
    if shards <= 1:
        return 0
    if event.queue is not None:
        basis = f"{event.topic}:{event.queue}"
    elif event.topic:
        basis = event.topic
    else:
        basis = event.consumer
    return zlib.crc32(basis.encode()) % shards


def stream_of(event: Event, shards: int) -> str:
    """The stream ``event`` is written to with ``shards`` shards."""
    return keys.EVENTS if shards <= 1 else keys.event_shard(shard_of(event, shards))


def _register_shards(streams: list[str], to: Any) -> object:
    return to.sadd(keys.EVENT_STREAMS, *streams)


def _add_event(stream: str, fields: dict[str, Any], maxlen: int, to: Any) -> object:
    return to.xadd(stream, fields, maxlen=maxlen, approximate=True)


def append(
    client: redis.Redis,
    events: Iterable[Event],
    maxlen: int = 1_000_000,
    shards: int | None = None,
) -> int:
    """Append events to the event log now, in one pipelined round trip per node (for writers outside
    a consumer process: beat tasks, operator actions). Each stream is capped at ``maxlen``
    (approximately). ``shards`` None: ``LOCKSTEP_EVENT_SHARDS``. Returns how many were
    written."""
    shards = event_shards_from_env() if shards is None else shards
    batch = [(stream_of(event, shards), event) for event in events]
    if not batch:
        return 0
    commands: list[Keyed] = []
    used = sorted({stream for stream, _ in batch} - {keys.EVENTS})
    if used:  # registered before the entries, so a reader never misses a written shard
        commands.append((keys.EVENT_STREAMS, partial(_register_shards, used)))
    for stream, event in batch:
        commands.append((stream, partial(_add_event, stream, event.fields(), maxlen)))
    execute_per_node(client, commands)  # the SADD's node first
    return len(batch)


_SHARD_NAME = re.compile(r"^" + re.escape(keys.PREFIX) + r":events:\{s(\d+)\}$")


def event_streams(client: redis.Redis, shards: int | None = None) -> list[str]:
    """Every stream that may hold events, in a stable order (``ls:events`` first, then the
    shards by index): ``ls:events`` (written with one shard, and before sharding), the
    shards of ``shards`` (None: ``LOCKSTEP_EVENT_SHARDS``) and every shard a writer
    registered in ``ls:events:streams``, so a reader whose setting differs from the
    writers' still reads them all. The one place that knows where events are: read
    through it (or ``read_all_events``), never ``keys.EVENTS`` alone."""
    shards = event_shards_from_env() if shards is None else shards
    registered = {
        m.decode() if isinstance(m, bytes) else str(m) for m in client.smembers(keys.EVENT_STREAMS)
    }
    registered = {name for name in registered if _SHARD_NAME.match(name)}  # nothing else
    return sorted({keys.EVENTS, *shard_streams(shards), *registered}, key=_stream_order)


def _stream_order(stream: str) -> tuple[int, int, str]:
    if stream == keys.EVENTS:
        return (0, 0, stream)
    match = _SHARD_NAME.match(stream)
    return (1, int(match.group(1)), stream) if match else (2, 0, stream)


def stored_id(stream: str, entry_id: str) -> str:
    """The ID an entry of ``stream`` is known by outside Redis (the dashboard's
    ``Event.stream_id``): the entry ID for ``ls:events``, else ``s<shard>:<entry ID>``.
    Entry IDs are unique only within one stream."""
    if stream == keys.EVENTS:
        return entry_id
    match = _SHARD_NAME.match(stream)
    if match is None:
        raise ValueError(f"{stream!r} is no event stream")
    return f"s{match.group(1)}:{entry_id}"


def read_stream_events(client: redis.Redis, stream: str) -> list[dict[str, Any]]:
    """Every event still in ``stream``, decoded, in stream order; ``id`` is the
    ``stored_id``. Read in pages."""
    out: list[dict[str, Any]] = []
    after = "-"
    while True:
        page: list[Entry] = entries(client.xrange(stream, min=after, max="+", count=10_000))
        if not page:
            return out
        for entry_id, raw in page:
            event = decode_event(entry_id, raw)
            event["id"] = stored_id(stream, event["id"])
            out.append(event)
        after = "(" + page[-1][0].decode()


def delete_event_log(client: redis.Redis) -> None:
    """Delete every event stream and the shard registry (benchmarks, tests): one key per
    ``DEL``, so it is valid on a cluster too."""
    for stream in event_streams(client):
        client.delete(stream)
    client.delete(keys.EVENT_STREAMS)


def count_events(client: redis.Redis, shards: int | None = None) -> int:
    """How many events are in the event log now (``XLEN`` of every stream, summed)."""
    return sum(int(client.xlen(stream)) for stream in event_streams(client, shards))


def read_all_events(client: redis.Redis, shards: int | None = None) -> list[dict[str, Any]]:
    """Every event still in the event log (every stream of ``event_streams``), decoded.
    Each queue's events are in their stream's order; streams are merged by entry ID (the
    writer's Redis time), the closest to a global order that exists: events of different
    queues have none."""
    merged: list[tuple[tuple[int, int], int, dict[str, Any]]] = []
    for rank, stream in enumerate(event_streams(client, shards)):
        for event in read_stream_events(client, stream):
            merged.append((entry_id_order(event["id"].rpartition(":")[2]), rank, event))
    # Stable: within one stream IDs only grow, so a stream's own order is kept.
    merged.sort(key=lambda item: (item[0], item[1]))
    return [event for _, _, event in merged]


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
        shards: int | None = None,  # None: LOCKSTEP_EVENT_SHARDS
    ) -> None:
        self._client = client
        self._shards = event_shards_from_env() if shards is None else shards
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
        started = time.monotonic()
        try:
            append(self._client, batch, self._maxlen, self._shards)
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
        redis_outage.ok(started)
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
