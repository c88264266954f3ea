"""The ingester: Redis event stream → database, then coalesced hints through Channels.

Contract:

- **Every shard.** The event log is one stream per shard (``LOCKSTEP_EVENT_SHARDS``,
  ``workers.events``); each pass reads every stream ``workers.events.event_streams``
  names (``ls:events``, the shards of this process's setting, and every shard a writer
  registered in ``ls:events:streams``), so a shard count changed on the writers' side is
  followed without a restart. Each stream has its own cursor (``IngestCursor`` named
  ``events`` for ``ls:events``, as before sharding, and the stream's key for a shard), and
  its own gap accounting. A queue's events are all in one stream and are stored in that
  stream's order, so per queue the database order is the order written; events of
  different queues have no order between them.
- **Exactly once.** Events are stored in batches of one stream, each batch in one
  transaction together with that stream's cursor (the last stream ID stored) and the
  event counters it bumps, so a process killed at any point resumes right after the last
  committed batch of each stream; the unique ``stream_id`` (the entry ID, prefixed
  ``s<shard>:`` for a shard: ``workers.events.stored_id``) makes a batch replayed by
  anyone store nothing twice and count nothing twice.
- **Nothing skipped silently.** The stream is bounded (``LOCKSTEP_EVENTS_MAXLEN``); if it
  was trimmed past the cursor while the ingester was away, events are gone. Every read
  is taken in one MULTI with ``XINFO STREAM`` of the same stream (one key: one slot, so
  the MULTI is valid on Redis Cluster too), so the ingester knows how many entries the
  stream ever received (``entries-added``) and how many remain; with the cursor's
  ``position`` (entries ever added up to the cursor) that gives the exact number lost.
  The gap is then *recorded*: a synthetic ``events_lost`` Event (stream ID
  ``lost:<stored id of the first entry still there>``, details ``after_id``,
  ``resumed_at_id``, ``lost``, and ``stream`` for a shard) is
  stored in the same transaction as the batch after it, and logged at ERROR level. The
  dashboard shows it like any other event; nothing else pretends the history is whole.
- **Survives hiccups.** Redis or database errors never end the loop: it backs off
  (0.5 s doubling to 10 s), drops its database connection and its cached cursor, and
  resumes from the cursor stored in the database. A Redis outage is logged once when it
  starts and once when it ends (``workers.outage``), without a traceback.

Live pushes are the ``Publisher``'s job (``dashboard.monitor.live``): state read at push
time, one message per channel group per tick, numbered.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis
from django.db import DatabaseError, InterfaceError, connection, transaction
from django.db.models import F

from lockstep.dashboard.monitor.live import IDLE_PUSH_SECONDS, OVERVIEW_GROUP, Publisher
from lockstep.dashboard.web.store.models import Event, EventCounter, IngestCursor
from lockstep.workers import events as ev
from lockstep.workers import keys
from lockstep.workers.connection import cluster_of
from lockstep.workers.events import decode_event, event_shards_from_env, event_streams, stored_id
from lockstep.workers.outage import REDIS_DOWN, redis_outage
from lockstep.workers.redis_types import Entry, xread_entries

log = logging.getLogger(__name__)

__all__ = ["IDLE_PUSH_SECONDS", "OVERVIEW_GROUP", "Ingester", "store_batch"]

CURSOR = "events"  # the cursor of ``ls:events``; a shard's cursor is named by its key
EVENTS_LOST = "events_lost"
BACKOFF_INITIAL = 0.5
BACKOFF_MAX = 10.0

# Event type -> the counter (``/metrics``: ``lockstep_<name>_total``) it bumps.
COUNTED = {
    ev.CONSUME_FAILED: "consume_retries",
    ev.DEAD_LETTERED: "dead_letters",
    ev.MALFORMED_ENTRY: "dead_letters",  # a malformed entry is dead-lettered with a reason
    ev.LOCK_ACQUIRED: "lock_owner_changes",
    ev.FENCING_REJECTED: "fencing_rejections",
}


def id_key(stream_id: str) -> tuple[int, int]:
    """A stream ID as a comparable (ms, seq) pair."""
    ms, _, seq = stream_id.partition("-")
    return int(ms), int(seq or 0)


@dataclass(frozen=True)
class Cursor:
    last_id: str
    position: int | None  # entries ever added up to last_id; None = unknown


@dataclass(frozen=True)
class StreamInfo:
    """What ``XINFO STREAM`` said, in the same MULTI as the read it describes."""

    length: int
    entries_added: int | None  # None before Redis 7.0
    first_id: str | None
    last_generated_id: str

    @property
    def removed(self) -> int | None:
        """Entries trimmed (or deleted) from the stream since it was created."""
        return None if self.entries_added is None else self.entries_added - self.length

    @classmethod
    def parse(cls, reply: Any) -> StreamInfo | None:
        if not isinstance(reply, dict):  # no stream yet (XINFO answered an error)
            return None
        # Keys are bytes when redis-py left the reply unparsed (a cluster MULTI).
        reply = {_text(k): v for k, v in reply.items()}
        first = reply.get("first-entry")
        return cls(
            length=int(reply["length"]),
            entries_added=int(reply["entries-added"]) if "entries-added" in reply else None,
            first_id=_text(first[0]) if first else None,
            last_generated_id=_text(reply["last-generated-id"]),
        )


@dataclass(frozen=True)
class Gap:
    after_id: str
    resumed_at_id: str
    lost: int | None  # None: a cursor whose position was unknown


@dataclass
class StoredBatch:
    new_rows: list[Event]
    cursor: Cursor
    gap: Gap | None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def find_gap(info: StreamInfo | None, cursor: Cursor) -> Gap | None:
    """Entries after ``cursor`` that were removed before they could be read.

    Trimming removes the oldest entries, so everything below the first remaining entry is
    gone; the cursor lost nothing if that first entry is at or below it. Otherwise the
    entries lost are those removed minus those up to the cursor (``position``). Before
    Redis 7.0 (no ``entries-added``) a first entry above a cursor that had stored something
    is reported as a gap of unknown size."""
    if info is None or info.removed == 0:
        return None
    resumed = info.first_id or info.last_generated_id
    if id_key(resumed) <= id_key(cursor.last_id):
        return None
    if info.removed is None:
        return Gap(cursor.last_id, resumed, None) if cursor.last_id != "0-0" else None
    if cursor.position is None:
        return Gap(cursor.last_id, resumed, None)
    lost = info.removed - cursor.position
    return Gap(cursor.last_id, resumed, lost) if lost > 0 else None


def next_cursor(
    cursor: Cursor, info: StreamInfo | None, gap: Gap | None, entries: list[Entry]
) -> Cursor:
    position = cursor.position
    last_id = cursor.last_id
    if gap is not None and info is not None:
        position = info.removed  # every entry below the first remaining one (or unknown)
        last_id = gap.resumed_at_id if info.first_id is None else last_id
    if entries:
        last_id = entries[-1][0].decode()
        position = None if position is None else position + len(entries)
    if info is not None and last_id == info.last_generated_id and info.entries_added is not None:
        position = info.entries_added  # caught up: exact again, whatever it was
    return Cursor(last_id, position)


def cursor_name(stream: str) -> str:
    """The ``IngestCursor`` of ``stream``: ``events`` for ``ls:events`` (the name it had
    before sharding, so an upgraded deployment resumes where it was), else the key."""
    return CURSOR if stream == keys.EVENTS else stream


def load_cursor(stream: str = keys.EVENTS) -> Cursor:
    row, _ = IngestCursor.objects.get_or_create(
        name=cursor_name(stream), defaults={"last_id": "0-0", "position": 0}
    )
    return Cursor(row.last_id, row.position)


def store_batch(
    entries: list[Entry],
    cursor: Cursor | None = None,
    info: StreamInfo | None = None,
    stream: str = keys.EVENTS,
) -> StoredBatch:
    """Store one batch read from ``stream`` after ``cursor`` (with the gap before it, if
    any), bump the counters and advance the stream's cursor, all in one transaction."""
    cursor = cursor or load_cursor(stream)
    gap = find_gap(info, cursor)
    after = next_cursor(cursor, info, gap, entries)
    rows = [_row(stream, decode_event(entry_id, raw)) for entry_id, raw in entries]
    if gap is not None:
        rows.insert(0, _lost_row(stream, gap))
    with transaction.atomic():
        known = _known_ids([r.stream_id for r in rows])
        new_rows = [r for r in rows if r.stream_id not in known]
        Event.objects.bulk_create(new_rows, ignore_conflicts=True, batch_size=500)
        _bump_counters(new_rows)
        IngestCursor.objects.update_or_create(
            name=cursor_name(stream),
            defaults={"last_id": after.last_id, "position": after.position},
        )
    if gap is not None:
        log.error(
            "event stream %s was trimmed past the ingester's cursor: %s events after %s "
            "were lost (resumed at %s); recorded as an %s event",
            stream,
            "an unknown number of" if gap.lost is None else gap.lost,
            gap.after_id,
            gap.resumed_at_id,
            EVENTS_LOST,
        )
    return StoredBatch(new_rows, after, gap)


def _known_ids(ids: list[str]) -> set[str]:
    """Which of ``ids`` are stored already (in chunks: old SQLite allows 999 parameters)."""
    known: set[str] = set()
    for i in range(0, len(ids), 500):
        known.update(
            Event.objects.filter(stream_id__in=ids[i : i + 500]).values_list("stream_id", flat=True)
        )
    return known


def _bump_counters(rows: list[Event]) -> None:
    counts: Counter[tuple[str, str, str, int]] = Counter()
    for row in rows:
        queue = row.queue if row.queue is not None else -1
        for name, amount in _counted(row):
            counts[(name, row.topic, row.group, queue)] += amount
    for (name, topic, group, queue), amount in sorted(counts.items()):
        series = EventCounter.objects.filter(name=name, topic=topic, group=group, queue=queue)
        if not series.update(value=F("value") + amount):
            EventCounter.objects.create(
                name=name, topic=topic, group=group, queue=queue, value=amount
            )


def _counted(row: Event) -> list[tuple[str, int]]:
    """The counters one stored event bumps, and by how much."""
    if row.type == EVENTS_LOST:
        lost = row.details.get("lost")
        return [("event_stream_gaps", 1), ("events_lost", lost if isinstance(lost, int) else 0)]
    name = COUNTED.get(row.type)
    if name is None:
        return []
    if row.type == ev.CONSUME_FAILED:  # one event per retried batch: count its messages
        offsets = row.details.get("offsets")
        return [(name, len(offsets) if isinstance(offsets, list) and offsets else 1)]
    return [(name, 1)]


def _row(stream: str, event: dict[str, Any]) -> Event:
    return Event(
        stream_id=stored_id(stream, event["id"]),
        type=event["type"][:40],
        ts=datetime.fromtimestamp(event["ts_ms"] / 1000.0, tz=UTC),
        topic=event["topic"][:128],
        group=event["group"][:128],
        queue=event["queue"],
        key=event["key"][:256],
        token=event["token"],
        consumer=event["consumer"][:200],
        details=event["details"],
    )


def _lost_row(stream: str, gap: Gap) -> Event:
    details: dict[str, Any] = {
        "after_id": gap.after_id,
        "resumed_at_id": gap.resumed_at_id,
        "lost": gap.lost,
        "reason": "the event stream was trimmed (LOCKSTEP_EVENTS_MAXLEN) "
        "past the ingester's cursor",
    }
    if stream != keys.EVENTS:
        details["stream"] = stream
    return Event(
        stream_id=f"lost:{stored_id(stream, gap.resumed_at_id)}"[:40],
        type=EVENTS_LOST,
        ts=datetime.now(tz=UTC),
        details=details,
    )


def _read_entries(reply: Any) -> list[Entry]:
    """The entries of a one-stream XREAD reply. redis-py parses it on a standalone
    server; in a cluster MULTI it is left raw (a map of stream -> entries whose fields are
    a flat list), so both shapes are taken."""
    if isinstance(reply, dict):
        reply = list(reply.items())
    return [
        (entry_id, raw if isinstance(raw, dict) else dict(zip(raw[::2], raw[1::2], strict=True)))
        for entry_id, raw in xread_entries(reply)
    ]


class Ingester:
    """Reads every event stream after its stored cursor, stores, publishes. One per
    deployment (two would store each event once between them, but number their pushes
    apart). ``shards``: the shard count this process expects (None:
    ``LOCKSTEP_EVENT_SHARDS``); shards registered by writers are read whatever it is."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        batch: int = 1000,
        push_interval: float = 0.5,
        shards: int | None = None,
    ) -> None:
        self.client = client
        self.batch = batch
        # Read once: a bad LOCKSTEP_EVENT_SHARDS stops the ingester at start, loudly.
        self.shards = event_shards_from_env() if shards is None else shards
        self.publisher = Publisher(client, push_interval)
        self.stored = 0
        # Per stream; a stream missing: read its cursor from the database first.
        self._cursors: dict[str, Cursor] = {}

    def streams(self) -> list[str]:
        """The streams this pass reads (``workers.events.event_streams``)."""
        return event_streams(self.client, self.shards)

    def run_once(self, block_ms: int = 200) -> int:
        """Read and store one batch after the cursor of each stream; returns how many
        entries were read. When there was nothing new in any, waits up to ``block_ms`` for
        something to arrive."""
        streams = self.streams()
        read = 0
        for stream in streams:
            read += self._ingest(stream)
        if not read and block_ms:  # (0 would block forever)
            self._wait(streams, block_ms)
        return read

    def _ingest(self, stream: str) -> int:
        cursor = self._cursors.get(stream)
        if cursor is None:
            cursor = self._cursors[stream] = load_cursor(stream)
        info, entries = self._read(stream, cursor.last_id)
        if not entries and find_gap(info, cursor) is None:
            self._sync_position(stream, info)
            return 0
        try:
            batch = store_batch(entries, cursor, info, stream)
        except Exception:
            self._cursors.clear()  # the transaction rolled back: trust only the database
            raise
        self._cursors[stream] = batch.cursor
        self.stored += sum(1 for r in batch.new_rows if r.type != EVENTS_LOST)
        self.publisher.record(batch.new_rows, stored_id(stream, batch.cursor.last_id))
        return len(entries)

    def _wait(self, streams: list[str], block_ms: int) -> None:
        """Until something arrives in any stream, at most ``block_ms``. A blocking XREAD of
        several keys is one command over several slots, which Redis Cluster refuses: there
        (and only there) the wait is a plain sleep."""
        after: dict[Any, Any] = {s: self._cursors[s].last_id for s in streams if s in self._cursors}
        if not after:
            return
        if len(after) > 1 and cluster_of(self.client) is not None:
            time.sleep(block_ms / 1000)
            return
        self.client.xread(after, count=1, block=block_ms)

    def _sync_position(self, stream: str, info: StreamInfo | None) -> None:
        """Caught up: make the stored position exact if it was not (an old cursor)."""
        cursor = self._cursors[stream]
        if (
            info is not None
            and info.entries_added is not None
            and cursor.last_id == info.last_generated_id
            and cursor.position != info.entries_added
        ):
            self._cursors[stream] = store_batch([], cursor, info, stream).cursor

    def _read(self, stream: str, after: str) -> tuple[StreamInfo | None, list[Entry]]:
        # One key, so one slot: a MULTI Redis Cluster accepts.
        pipe = self.client.pipeline(transaction=True)
        pipe.xinfo_stream(stream)
        pipe.xread({stream: after}, count=self.batch)
        info_reply, read_reply = pipe.execute(raise_on_error=False)
        if isinstance(read_reply, Exception):
            raise read_reply
        return StreamInfo.parse(info_reply), _read_entries(read_reply)

    def maybe_push(self) -> bool:
        if not self.publisher.due():
            return False
        self.publisher.push()
        return True

    def push(self) -> None:
        self.publisher.push()

    def run_forever(self, stop: threading.Event) -> None:
        """Ingest until ``stop`` is set. Errors back off (``BACKOFF_INITIAL`` doubling up to
        ``BACKOFF_MAX``) and never end the loop. A Redis outage is told by the process's
        ``redis_outage`` (one warning when it starts, one when it ends); each retry is a
        DEBUG line. A database outage, or a Redis error that is no outage (a bug, logged
        with its traceback), is a warning per retry and one when it recovers."""
        backoff = BACKOFF_INITIAL
        failing = False
        while not stop.is_set():
            started = time.monotonic()
            try:
                self.run_once()
                # Before pushing: a push that meets a new outage reports it itself, and
                # must not be declared over by this same tick.
                redis_outage.ok(started)
                self.maybe_push()
            except REDIS_DOWN as exc:
                redis_outage.failed(exc, "the event ingester")
                log.debug("ingester: Redis unavailable (%s); retrying in %.1fs", exc, backoff)
            except (redis.RedisError, DatabaseError, InterfaceError) as exc:
                failing = True
                log.warning(
                    "ingester: %s unavailable (%s); retrying in %.1fs",
                    "Redis" if isinstance(exc, redis.RedisError) else "database",
                    exc,
                    backoff,
                    exc_info=isinstance(exc, redis.RedisError),
                )
            else:
                if failing:
                    log.warning(
                        "ingester: recovered; stored up to %s",
                        {s: c.last_id for s, c in self._cursors.items()} or "?",
                    )
                    failing = False
                backoff = BACKOFF_INITIAL
                continue
            self._reset_after_error()
            stop.wait(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)

    def _reset_after_error(self) -> None:
        self._cursors.clear()
        with contextlib.suppress(DatabaseError, InterfaceError):
            connection.close()  # a broken connection is replaced on next use
