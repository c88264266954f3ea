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
  committed batch of each stream. The cursor moves by compare-and-set, first in the
  transaction: a batch read after a cursor that another ingester has moved since is
  refused whole (``CursorMoved``) before it stores or counts anything. The unique
  ``stream_id`` (the entry ID, prefixed ``s<shard>:`` for a shard:
  ``workers.events.stored_id``) and the check for rows already stored make a batch
  replayed by anyone store nothing twice and count nothing twice.
- **Lag samples per queue.** The beat writes a tick's lag samples as one entry per
  (topic, group, owner) and up to 256 queues; each is stored as one row per queue,
  ``<stored id>/<queue>`` (``ingest_store.expand_samples``), as the samples were before
  they were batched: every reader of the stored rows sees what it saw then.
- **Several ingesters.** With ``leases`` (``ingest_leases``; ``manage.py ingest_events``
  always has them) each stream is read by the one ingester holding its lease, and a
  killed ingester's streams are taken over when its leases expire, from the cursors in
  the database. Only the holder of the publisher's lease records and pushes.
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
time, one message per channel group per tick, numbered. The writes themselves are plain
SQL (``ingest_store``): the ORM's compilation of every row cost more than the database.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis
from django.db import DatabaseError, InterfaceError, connection, transaction

from lockstep.dashboard.monitor.ingest_leases import StreamLeases
from lockstep.dashboard.monitor.ingest_store import (
    StoredEvent,
    bump_counters,
    expand_samples,
    insert_new,
    write_turn,
)
from lockstep.dashboard.monitor.live import (
    IDLE_PUSH_SECONDS,
    OVERVIEW_GROUP,
    Publisher,
    PushThread,
)
from lockstep.dashboard.web.store.models import IngestCursor
from lockstep.workers import events as ev
from lockstep.workers import keys
from lockstep.workers.connection import cluster_of
from lockstep.workers.events import decode_event, event_shards_from_env, event_streams, stored_id
from lockstep.workers.outage import REDIS_DOWN, redis_outage
from lockstep.workers.redis_types import Entry, entry_id_order, xread_entries

log = logging.getLogger(__name__)

__all__ = ["IDLE_PUSH_SECONDS", "OVERVIEW_GROUP", "CursorMoved", "Ingester", "store_batch"]

CURSOR = "events"  # the cursor of ``ls:events``; a shard's cursor is named by its key
EVENTS_LOST = "events_lost"
BACKOFF_INITIAL = 0.5
BACKOFF_MAX = 10.0

# Event type -> the counter (``/metrics``: ``lockstep_<name>_total``) it bumps.
# Rows a read of one stream should store at most, when its entries expand (``read_count``).
ROWS_PER_READ = 20_000
COUNTED = {
    ev.CONSUME_FAILED: "consume_retries",
    ev.DEAD_LETTERED: "dead_letters",
    ev.MALFORMED_ENTRY: "dead_letters",  # a malformed entry is dead-lettered with a reason
    ev.LOCK_ACQUIRED: "lock_owner_changes",
    ev.FENCING_REJECTED: "fencing_rejections",
}


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
    """What one ``store_batch`` stored: the events new to the database (a batch replayed
    stores none), the cursor after it, the gap recorded before it."""

    new_events: list[StoredEvent]
    cursor: Cursor
    gap: Gap | None

    @property
    def stored(self) -> int:
        """Runtime events stored (a recorded gap is no event of the runtime)."""
        return sum(1 for e in self.new_events if e.type != EVENTS_LOST)

    def rows(self) -> list[StoredEvent]:
        """The new events, for the live pushes (which make an ``Event`` of the few they
        send: a tick of lag samples is thousands of rows they only read)."""
        return self.new_events


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
    if entry_id_order(resumed) <= entry_id_order(cursor.last_id):
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
    any), bump the counters and advance the stream's cursor, all in one transaction.
    ``CursorMoved`` (nothing stored): the stored cursor is no longer ``cursor``."""
    cursor = cursor or load_cursor(stream)
    gap = find_gap(info, cursor)
    after = next_cursor(cursor, info, gap, entries)
    events = _stored_events(stream, entries)
    if gap is not None:
        events.insert(0, _lost_event(stream, gap))
    with write_turn(), transaction.atomic():
        # First: the cursor's row lock orders two writers of one stream, and the late one
        # finds the cursor moved and rolls back before it stored or counted anything.
        _advance_cursor(stream, cursor, after)
        new_events = insert_new(events)
        bump_counters(_counts(new_events))
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
    return StoredBatch(new_events, after, gap)


def _stored_events(stream: str, entries: list[Entry]) -> list[StoredEvent]:
    """The rows ``entries`` of ``stream`` are stored as, in stream order: one per entry, but
    a batch of lag samples, one per queue it samples (``ingest_store.expand_samples``)."""
    return [
        row
        for entry_id, raw in entries
        for row in expand_samples(
            StoredEvent.decoded(stored_id(stream, entry_id.decode()), decode_event(entry_id, raw))
        )
    ]


def read_count(batch: int, entries: int, rows: int) -> int:
    """Entries to read next from a stream whose last read of ``entries`` stored ``rows``:
    ``batch``, or fewer while its entries expand to many rows (batches of lag samples,
    up to 256 rows each), so that a read stores about ``ROWS_PER_READ`` rows at most
    and an ingester catching up on a backlog of samples stays small in memory."""
    if rows <= entries or entries == 0:
        return batch
    return max(1, min(batch, ROWS_PER_READ * entries // rows))


class CursorMoved(Exception):
    """The stream's cursor in the database is no longer the one the batch was read after:
    another ingester stored from it meanwhile (a lease that lapsed while its holder was
    paused). The batch's transaction is rolled back; re-read the cursor."""


def _advance_cursor(stream: str, before: Cursor, after: Cursor) -> None:
    """Compare-and-set: move the cursor of ``stream`` from ``before`` to ``after``, or raise
    ``CursorMoved`` when it is no longer at ``before``."""
    name = cursor_name(stream)
    moved = IngestCursor.objects.filter(name=name, last_id=before.last_id).update(
        last_id=after.last_id, position=after.position, updated_at=datetime.now(tz=UTC)
    )
    if moved:
        return
    _, created = IngestCursor.objects.get_or_create(
        name=name, defaults={"last_id": after.last_id, "position": after.position}
    )
    if not created:
        raise CursorMoved(f"the cursor of {stream} moved past {before.last_id}")


def _counts(events: list[StoredEvent]) -> Iterator[tuple[tuple[str, str, str, int], int]]:
    """Each counter series (name, topic, group, queue) the events bump, with the amount."""
    for event in events:
        queue = event.queue if event.queue is not None else -1
        for name, amount in _counted(event):
            yield (name, event.topic, event.group, queue), amount


def _counted(row: StoredEvent) -> list[tuple[str, int]]:
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


def _lost_event(stream: str, gap: Gap) -> StoredEvent:
    details: dict[str, Any] = {
        "after_id": gap.after_id,
        "resumed_at_id": gap.resumed_at_id,
        "lost": gap.lost,
        "reason": "the event stream was trimmed (LOCKSTEP_EVENTS_MAXLEN) "
        "past the ingester's cursor",
    }
    if stream != keys.EVENTS:
        details["stream"] = stream
    return StoredEvent(
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
    """Reads event streams after their stored cursors, stores, publishes.

    ``leases`` None: this ingester reads every stream and pushes live updates, alone (tests
    and tools; ``manage.py ingest_events`` always passes leases). With ``leases``, any
    number of ingesters split the streams (``ingest_leases``): each reads only the streams
    it holds the lease of, and only the holder of the publisher's lease records and pushes.
    ``shards``: the shard count this process expects (None: ``LOCKSTEP_EVENT_SHARDS``);
    shards registered by writers are read whatever it is."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        batch: int = 1000,
        push_interval: float = 0.5,
        shards: int | None = None,
        leases: StreamLeases | None = None,
        background: bool = False,
    ) -> None:
        self.client = client
        self.batch = batch
        # Read once: a bad LOCKSTEP_EVENT_SHARDS stops the ingester at start, loudly.
        self.shards = event_shards_from_env() if shards is None else shards
        self.push_interval = push_interval
        self.background = background
        self.publisher: Publisher | PushThread = self._new_publisher()
        self.leases = leases
        self.stored = 0
        # Per stream; a stream missing: read its cursor from the database first.
        self._cursors: dict[str, Cursor] = {}
        # Per stream: entries to read next (``read_count``); missing: ``batch``.
        self._counts: dict[str, int] = {}
        self._published = leases is None  # whether it held the publisher's lease last pass
        self._known_streams: list[str] = []
        self._standing_by = False

    def streams(self) -> list[str]:
        """The streams this pass reads (``workers.events.event_streams``)."""
        return event_streams(self.client, self.shards)

    def run_once(self, block_ms: int = 200) -> int:
        """Read and store one batch after the cursor of each stream it reads (all of them,
        or those it holds the lease of); returns how many entries were read. When there
        was nothing new in any, waits up to ``block_ms`` for something to arrive."""
        streams = self._mine(self.streams())
        read = 0
        for stream in streams:
            if self.leases is None or self.leases.holds(stream):  # a lease may lapse meanwhile
                read += self._ingest(stream)
        if not read and block_ms:  # (0 would block forever)
            self._wait(streams, block_ms)
        return read

    def _mine(self, streams: list[str]) -> list[str]:
        """Of ``streams``, those this ingester reads now; refreshes the leases when due or
        when the streams changed (a writer registered a shard)."""
        if self.leases is None:
            return streams
        if self.leases.due() or streams != self._known_streams:
            self.leases.refresh(streams)
            self._known_streams = streams
            self._note_assignment(streams)
        for stream in set(self._cursors) - set(self.leases.held_streams(streams)):
            del self._cursors[stream]  # another ingester may move it: re-read when back
        self._follow_publisher_lease()
        return self.leases.held_streams(streams)

    def _note_assignment(self, streams: list[str]) -> None:
        """Say once when this ingester has nothing to read: more ingesters than streams."""
        assert self.leases is not None
        idle = not self.leases.assigned and self.leases.me in self.leases.members
        if idle and not self._standing_by:
            log.warning(
                "ingester: standing by: %d ingesters for %d event streams "
                "(LOCKSTEP_EVENT_SHARDS=%d); it takes over a stream when an ingester stops",
                len(self.leases.members),
                len(streams),
                self.shards,
            )
        self._standing_by = idle

    def _follow_publisher_lease(self) -> None:
        """A fresh ``Publisher`` each time this ingester becomes the one that pushes: what
        it knew from an earlier turn is stale, and a fresh one's first push skips a number
        in every group (docs/events.md §5), so pages re-read."""
        assert self.leases is not None
        publishing = self.leases.publishing()
        if publishing and not self._published:
            self.publisher = self._new_publisher()
            log.info("ingester %s: pushing live updates", self.leases.me)
        elif self._published and not publishing and isinstance(self.publisher, PushThread):
            self.publisher.stop(clear_writer=False)  # another ingester pushes now
        self._published = publishing

    def _new_publisher(self) -> Publisher | PushThread:
        """``background``: the pushes (and the fleet state's sweeps) on a thread of their
        own (``manage.py ingest_events``); else in the caller's (tests and tools)."""
        if isinstance(getattr(self, "publisher", None), PushThread):
            self.publisher.stop(clear_writer=False)
        if self.background:
            return PushThread(self.client, self.push_interval)
        return Publisher(self.client, self.push_interval)

    def _publishing(self) -> bool:
        return self.leases is None or self.leases.publishing()

    def _ingest(self, stream: str) -> int:
        cursor = self._cursors.get(stream)
        if cursor is None:
            cursor = self._cursors[stream] = load_cursor(stream)
        info, entries = self._read(stream, cursor.last_id, self._counts.get(stream, self.batch))
        if not entries and find_gap(info, cursor) is None:
            self._sync_position(stream, info)
            return 0
        try:
            batch = store_batch(entries, cursor, info, stream)
        except CursorMoved:
            # Another ingester stored this stream meanwhile: nothing was stored here.
            log.info("ingester: %s was stored by another ingester; re-reading its cursor", stream)
            del self._cursors[stream]
            return len(entries)
        except Exception:
            self._cursors.clear()  # the transaction rolled back: trust only the database
            raise
        self._cursors[stream] = batch.cursor
        self._counts[stream] = read_count(self.batch, len(entries), len(batch.new_events))
        self.stored += batch.stored
        if self._publishing():
            self.publisher.record(batch.rows(), stored_id(stream, batch.cursor.last_id))
        return len(entries)

    def _wait(self, streams: list[str], block_ms: int) -> None:
        """Until something arrives in any stream, at most ``block_ms``. A blocking XREAD of
        several keys is one command over several slots, which Redis Cluster refuses: there
        (and only there) the wait is a plain sleep, as it is for an ingester standing by."""
        after: dict[Any, Any] = {s: self._cursors[s].last_id for s in streams if s in self._cursors}
        if not after:
            if self.leases is not None:
                time.sleep(block_ms / 1000)
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

    def _read(self, stream: str, after: str, count: int) -> tuple[StreamInfo | None, list[Entry]]:
        # One key, so one slot: a MULTI Redis Cluster accepts.
        pipe = self.client.pipeline(transaction=True)
        pipe.xinfo_stream(stream)
        pipe.xread({stream: after}, count=count)
        info_reply, read_reply = pipe.execute(raise_on_error=False)
        if isinstance(read_reply, Exception):
            raise read_reply
        return StreamInfo.parse(info_reply), _read_entries(read_reply)

    def maybe_push(self) -> bool:
        if not self._publishing() or not self.publisher.due():
            return False
        self.publisher.push()
        return True

    def push(self) -> None:
        if self._publishing():
            self.publisher.push()

    def run_forever(self, stop: threading.Event) -> None:
        """Ingest until ``stop`` is set, then give up the leases (the others take over at
        once). Errors back off (``BACKOFF_INITIAL`` doubling up to ``BACKOFF_MAX``) and
        never end the loop. A Redis outage is told by the process's ``redis_outage`` (one
        warning when it starts, one when it ends); each retry is a DEBUG line. A database
        outage, or a Redis error that is no outage (a bug, logged with its traceback), is
        a warning per retry and one when it recovers."""
        try:
            self._loop(stop)
        finally:
            # The fleet writer goes with the process that wrote it (pages then sweep
            # themselves until another ingester pushes); a thread that stopped at a
            # handover stays stopped.
            with contextlib.suppress(redis.RedisError):
                if isinstance(self.publisher, PushThread):
                    self.publisher.stop(clear_writer=self._publishing())
                elif self._publishing():
                    self.publisher.stop()
            if self.leases is not None:
                self.leases.release_all()

    def _loop(self, stop: threading.Event) -> None:
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
                    # One line per retry: PostgreSQL's errors run over several
                    # (a hint, the context of a trigger's error).
                    " ".join(str(exc).split()),
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
