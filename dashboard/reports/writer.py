"""Appending what is new to the analytics data set (docs/analytics.md §2), every
``LOCKSTEP_ANALYTICS_WRITE_SECONDS`` (the beat task ``write_analytics_data``).

Two sources, each read after its cursors (``DataCursor`` rows):

- stored events (``dashboard.web.store.models.Event``) after the ``events`` cursor (the last
  id written), in database id order: ``lag_sampled`` rows go to ``samples``, every other
  type (the ingester's ``events_lost`` too) to ``events``, with the columns docs/analytics.md
  §1 lifts out of the details;
- every queue's stream entries after its ``messages:<topic>:<queue>`` cursor (the next
  offset to write): one row per message (key, produce time, body size; not the body).

Exactly once (docs/analytics.md §2). A batch is written as one file per partition it
touches (``analytics.storage.write_batch``: written aside and renamed, so a file is
replaced whole, never appended to), and only then are its cursors moved, in one database
transaction. A call that fails between the two leaves the cursors where they were, and the
next call writes the same batch again under the same file names:

- an events batch is named ``e<first id it may hold>`` (the events cursor + 1) and holds
  the first ``EVENT_BATCH_ROWS`` stored events after the cursor. Written again, it reads
  from the same cursor with the same limit: the same rows, or more when it was short of
  the limit the first time (ids only grow, and the one ingester, docs/events.md §4,
  commits them in id order). Every row of an earlier file is in the new file of its
  partition, which replaces it.
- a messages batch spans every queue, so that a run writes one file per partition rather
  than one per queue. How far it reads each queue depends on what the streams held then,
  so before writing it records its plan, the offset it ends at per queue
  (``messages-plan:<topic>:<queue>`` rows), and is named after the batch counter (the
  ``messages`` cursor: ``m<n>``). Written again, it reads exactly its planned ranges. The
  counter, the queue cursors and the plan's removal are one transaction.

Rows are therefore never doubled. They can be missed only where the source lost them
first: entries trimmed from a stream before they were read (logged with how many), and
stored events deleted by retention before they were read (a writer days behind).

One call writes at a time: it holds a Redis lock (``LOCK_KEY``, renewed before every
batch) and moves each cursor only from the position it read (a conditional update), so
two overlapping beat runs cannot interleave their writes of one batch.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import redis
from django.conf import settings
from django.db import transaction
from redis.exceptions import LockError
from redis.lock import Lock

from lockstep.analytics.layout import EVENTS, MESSAGES, SAMPLES, arrow_schema
from lockstep.analytics.storage import write_batch
from lockstep.dashboard.reports.models import DataCursor
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.store.models import Event
from lockstep.workers import events as ev
from lockstep.workers.inspect import StreamRange, stream_ranges
from lockstep.workers.redis_types import Entry
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import list_topics

log = logging.getLogger(__name__)

EVENTS_CURSOR = "events"
MESSAGES_COUNTER = "messages"
CURSOR_PREFIX = "messages:"
PLAN_PREFIX = "messages-plan:"
# Stored events per batch: a few tens of MB of rows in memory, one file per hour touched;
# a minute of a busy deployment's events fits in one or two.
EVENT_BATCH_ROWS = 50_000
# Messages per batch over all queues (~40 bytes a row once in Arrow; the stream replies
# are parsed a pipeline at a time): a minute at tens of thousands a second is a few
# batches, each one file per hour touched.
MESSAGE_BATCH_ROWS = 200_000
# Every queue with news is read at least this much per pass of a batch, so a batch over
# many queues still moves each of them.
MIN_QUEUE_READ = 100
# Queues read per pipelined round trip: bounds the replies held at once.
QUEUES_PER_PIPELINE = 128
# A call stops starting batches after this share of the write interval, so it ends before
# the next beat tick is due.
BUDGET_SHARE = 0.75
# Only one call writes at a time. The lock is renewed before each batch, so it only has
# to outlast one batch; a killed writer blocks the next ones for at most this long.
LOCK_KEY = "lockstep-web:analytics-writer"
LOCK_TIMEOUT_S = 120
ERROR_TYPE_CHARS = 200

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_EVENT_FIELDS = (
    "id",
    "stream_id",
    "type",
    "ts",
    "topic",
    "group",
    "queue",
    "key",
    "token",
    "consumer",
    "details",
)


class CursorMoved(RuntimeError):
    """A cursor was not where this call read it: another writer moved it."""


def write_new_data(budget_s: float | None = None) -> dict[str, int]:
    """Append what is new to ``settings.LOCKSTEP_ANALYTICS_URI``, batch after batch, until
    every source is caught up or ``budget_s`` (by default ``BUDGET_SHARE`` of the write
    interval) is spent. Returns the rows written per data set; all zero when another
    call is writing."""
    written = {MESSAGES: 0, EVENTS: 0, SAMPLES: 0}
    client = get_redis()
    lock = client.lock(LOCK_KEY, timeout=LOCK_TIMEOUT_S, blocking=False)
    if not lock.acquire():
        log.info("analytics writer: another call is writing; nothing done")
        return written
    try:
        _write_until(client, lock, written, _deadline(budget_s))
    except LockError:  # expired during a batch, and renewing it failed: stop writing
        log.warning("analytics writer: lost its lock; stopping (the next call goes on)")
    finally:
        _release(lock)
    return written


def _deadline(budget_s: float | None) -> float:
    if budget_s is None:
        budget_s = settings.LOCKSTEP_ANALYTICS_WRITE_SECONDS * BUDGET_SHARE
    return time.monotonic() + budget_s


def _write_until(client: redis.Redis, lock: Lock, written: dict[str, int], deadline: float) -> None:
    """Alternate events and messages batches until both are caught up or time is up."""
    uri = settings.LOCKSTEP_ANALYTICS_URI
    refs = _all_queues(client)
    events_due = messages_due = True
    while (events_due or messages_due) and time.monotonic() < deadline:
        if events_due:
            lock.reacquire()
            events_due = write_events_batch(uri, written)
        if messages_due and time.monotonic() < deadline:
            lock.reacquire()
            messages_due = write_messages_batch(client, uri, refs, written)


def _release(lock: Lock) -> None:
    try:
        lock.release()
    except LockError:  # expired during a batch: the warning is all that is left to do
        log.warning("analytics writer: its lock expired before it finished")


# ---- cursors ---------------------------------------------------------------------------


def _positions(prefix: str) -> dict[str, int]:
    return dict(DataCursor.objects.filter(name__startswith=prefix).values_list("name", "position"))


def _commit(moves: dict[str, tuple[int, int]], drop_plan: bool = False) -> None:
    """Move each cursor ``name`` from ``old`` to ``new`` (creating it when ``old`` is 0
    and it does not exist yet) and, with ``drop_plan``, drop the messages plan, all in one
    transaction; raise ``CursorMoved`` (and move nothing) when a cursor was not at
    ``old``."""
    with transaction.atomic():
        for name, (old, new) in moves.items():
            if DataCursor.objects.filter(name=name, position=old).update(position=new):
                continue
            if old != 0 or DataCursor.objects.filter(name=name).exists():
                raise CursorMoved(f"analytics cursor {name} is no longer at {old}")
            DataCursor.objects.create(name=name, position=new)
        if drop_plan:
            DataCursor.objects.filter(name__startswith=PLAN_PREFIX).delete()


def _cursor_name(ref: QueueRef) -> str:
    return f"{CURSOR_PREFIX}{ref.topic}:{ref.queue}"


def _plan_name(ref: QueueRef) -> str:
    return f"{PLAN_PREFIX}{ref.topic}:{ref.queue}"


def _by_queue(positions: dict[str, int], prefix: str) -> dict[QueueRef, int]:
    """The positions of the ``<prefix><topic>:<queue>`` rows, by queue."""
    found = {}
    for name, position in positions.items():
        if name.startswith(prefix):
            topic, _, queue = name[len(prefix) :].rpartition(":")  # topic names have no ':'
            found[QueueRef(topic, int(queue))] = position
    return found


# ---- events and samples ----------------------------------------------------------------


def write_events_batch(uri: str, written: dict[str, int]) -> bool:
    """Write the next batch of stored events; ``True`` when more may be waiting."""
    after = _positions(EVENTS_CURSOR).get(EVENTS_CURSOR, 0)
    rows = list(
        Event.objects.filter(id__gt=after)
        .order_by("id")
        .values_list(*_EVENT_FIELDS)[:EVENT_BATCH_ROWS]
    )
    if not rows:
        return False
    samples = [r for r in rows if r[2] == ev.LAG_SAMPLED]
    others = [r for r in rows if r[2] != ev.LAG_SAMPLED]
    batch = f"e{after + 1}"
    write_batch(uri, EVENTS, events_table(others), batch)
    write_batch(uri, SAMPLES, samples_table(samples), batch)
    _commit({EVENTS_CURSOR: (after, rows[-1][0])})
    written[EVENTS] += len(others)
    written[SAMPLES] += len(samples)
    return len(rows) == EVENT_BATCH_ROWS


def to_ms(moment: datetime) -> int:
    """Epoch milliseconds, exactly (integer arithmetic; a naive time is taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MS


def events_table(rows: list[tuple[Any, ...]]) -> pa.Table:
    """``events`` rows from ``Event`` value tuples (``_EVENT_FIELDS`` order)."""
    cols: dict[str, list[Any]] = {name: [] for name in arrow_schema(EVENTS).names}
    for _id, stream_id, type_, ts, topic, group, queue, key, token, consumer, raw in rows:
        details = raw if isinstance(raw, dict) else {"value": raw}
        offset, offset_to, n = lifted_offsets(type_, details)
        cols["id"].append(stream_id)
        cols["type"].append(type_)
        cols["ts_ms"].append(to_ms(ts))
        cols["topic"].append(topic)
        cols["group"].append(group)
        cols["queue"].append(_int(queue))
        cols["key"].append(key)
        cols["token"].append(_long(token))
        cols["consumer"].append(consumer)
        cols["offset"].append(offset)
        cols["offset_to"].append(offset_to)
        cols["n"].append(n)
        cols["reconsume_times"].append(_int(details.get("reconsume_times")))
        cols["error_type"].append(error_type(details.get("error")))
        cols["dlq_id"].append(_text(details.get("dlq_id")))
        cols["details"].append(_json(details))
    return pa.Table.from_pydict(cols, schema=arrow_schema(EVENTS))


def lifted_offsets(
    type_: str, details: dict[str, Any]
) -> tuple[int | None, int | None, int | None]:
    """``(offset, offset_to, n)`` of an event (docs/analytics.md §1): a commit's
    ``from_offset``, new offset and commit count; the first of a list of ``offsets``
    (retried, parked) and how many (a margin overrun's ``[first, last]`` is a range:
    ``offset_to`` is its last); else the details' ``offset``."""
    if type_ == ev.OFFSET_COMMITTED:
        return (
            _long(details.get("from_offset")),
            _long(details.get("offset")),
            _int(details.get("commits")),
        )
    offsets = details.get("offsets")
    if isinstance(offsets, list):
        first = _long(offsets[0]) if offsets else None
        if type_ == ev.LOCK_MARGIN_OVERRUN:
            return first, _long(offsets[-1]) if offsets else None, None
        return first, None, _int(len(offsets))
    return _long(details.get("offset")), None, None


def error_type(error: Any) -> str | None:
    """The exception's class name: the text before the first ':' of an error, stripped,
    at most ``ERROR_TYPE_CHARS``; ``None`` without an error."""
    text = _text(error)
    if not text:
        return None
    return text.split(":", 1)[0].strip()[:ERROR_TYPE_CHARS] or None


def samples_table(rows: list[tuple[Any, ...]]) -> pa.Table:
    """``samples`` rows from ``lag_sampled`` value tuples; fields a sample lacks (older
    samples) are null, its blocked keys an empty list."""
    cols: dict[str, list[Any]] = {name: [] for name in arrow_schema(SAMPLES).names}
    for row in rows:
        _id, _sid, _type, ts, topic, group, queue, _key, _token, _consumer, raw = row
        d = raw if isinstance(raw, dict) else {}
        cols["ts_ms"].append(to_ms(ts))
        cols["topic"].append(topic)
        cols["group"].append(group)
        cols["queue"].append(_int(queue))
        for name in ("max_offset", "committed_offset", "lag", "head_offset", "parked"):
            cols[name].append(_long(d.get(name)))
        for name in ("retries", "blocked_count", "held_keys"):
            cols[name].append(_int(d.get(name)))
        cols["time_lag_s"].append(_float(d.get("time_lag_s")))
        for name in ("owner", "state", "head_key"):
            cols[name].append(_text(d.get(name)))
        cols["blocked_keys"].append(blocked_keys(d.get("blocked_keys")))
    return pa.Table.from_pydict(cols, schema=arrow_schema(SAMPLES))


def blocked_keys(listed: Any) -> list[dict[str, Any]]:
    """A sample's ``blocked_keys`` as the layout's structs (anything else: none)."""
    if not isinstance(listed, list):
        return []
    return [
        {
            "key": _text(b.get("key")),
            "offset": _long(b.get("offset")),
            "retries": _int(b.get("retries")),
            "waiting": _int(b.get("waiting")),
            "since_ms": _long(b.get("since_ms")),
            "error": _text(b.get("error")),
            "held": b["held"] if isinstance(b.get("held"), bool) else None,
        }
        for b in listed
        if isinstance(b, dict)
    ]


# Details come from JSON anyone could have written to the event stream: a value of the
# wrong type or range becomes null rather than failing the batch (and every later call).


def _number(value: Any, bounds: tuple[int, int]) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if bounds[0] <= value <= bounds[1] else None


def _int(value: Any) -> int | None:
    return _number(value, _INT32)


def _long(value: Any) -> int | None:
    return _number(value, _INT64)


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a JSON escape
        return value.encode("utf-8", "replace").decode("utf-8")
    return value


def _json(details: dict[str, Any]) -> str:
    # ASCII escapes keep lone surrogates valid JSON text.
    return json.dumps(details, separators=(",", ":"), default=str)


# ---- messages --------------------------------------------------------------------------


@dataclass
class _QueueRead:
    """What a batch read of one queue: from ``start`` (its cursor) up to ``next``."""

    ref: QueueRef
    start: int
    next: int
    first: int | None = None  # the first entry's offset, foreign or not
    skipped: int = 0  # foreign or malformed entries moved past


@dataclass
class _MessageColumns:
    topic: list[str] = field(default_factory=list)
    queue: list[int] = field(default_factory=list)
    offset: list[int] = field(default_factory=list)
    key: list[str] = field(default_factory=list)
    produced_ms: list[int] = field(default_factory=list)
    size: list[int] = field(default_factory=list)

    def take(self, read: _QueueRead, found: list[Entry]) -> None:
        """Append the messages among ``found`` (read after ``read.next``); entries whose
        ID is not ``<offset>-1`` or that lack a field are moved past, not written."""
        for entry_id, fields in found:
            head, _, seq = entry_id.partition(b"-")
            offset = int(head)
            read.next = offset + 1
            if read.first is None:
                read.first = offset
            try:
                if seq != b"1":
                    raise ValueError("not <offset>-1")
                key = fields[b"k"].decode("utf-8", "replace")
                produced_ms = int(fields[b"t"])
                size = len(fields[b"b"])
            except (KeyError, ValueError):
                read.skipped += 1
                continue
            self.topic.append(read.ref.topic)
            self.queue.append(read.ref.queue)
            self.offset.append(offset)
            self.key.append(key)
            self.produced_ms.append(produced_ms)
            self.size.append(size)

    def table(self) -> pa.Table:
        return pa.Table.from_pydict(
            {
                "topic": self.topic,
                "queue": self.queue,
                "offset": self.offset,
                "key": self.key,
                "produced_ms": self.produced_ms,
                "size": self.size,
            },
            schema=arrow_schema(MESSAGES),
        )


def _all_queues(client: redis.Redis) -> list[QueueRef]:
    return [QueueRef(t.name, q) for t in list_topics(client) for q in range(t.queues)]


def write_messages_batch(
    client: redis.Redis, uri: str, refs: list[QueueRef], written: dict[str, int]
) -> bool:
    """Write the next messages batch over ``refs`` (or, first, the planned batch a failed
    call left); ``True`` when more may be waiting."""
    positions = _positions("messages")
    counter = positions.get(MESSAGES_COUNTER, 0)
    cursors, plan = _by_queue(positions, CURSOR_PREFIX), _by_queue(positions, PLAN_PREFIX)
    if plan:
        log.info("analytics writer: writing messages batch m%s again, as planned", counter)
        reads, columns = _read_planned(client, cursors, plan)
        more = True
    else:
        reads, columns, more = _read_new(client, [(r, cursors.get(r, 0)) for r in refs])
        plan = {r.ref: r.next for r in reads if r.next > r.start}
        if not plan:
            return False
        _save_plan(plan)
    _report_gaps(reads, cursors)
    table = columns.table()
    write_batch(uri, MESSAGES, table, f"m{counter}")
    moves = {_cursor_name(r.ref): (r.start, plan[r.ref]) for r in reads if r.ref in plan}
    moves[MESSAGES_COUNTER] = (counter, counter + 1)
    _commit(moves, drop_plan=True)
    written[MESSAGES] += table.num_rows
    return more


def _read_new(
    client: redis.Redis, starts: list[tuple[QueueRef, int]]
) -> tuple[list[_QueueRead], _MessageColumns, bool]:
    """Read after each queue's cursor, sharing ``MESSAGE_BATCH_ROWS`` among the queues
    that still have entries; the third value says whether some queue may have more."""
    reads = [_QueueRead(ref, start, start) for ref, start in starts]
    columns = _MessageColumns()
    active, budget = reads, MESSAGE_BATCH_ROWS
    while active and budget > 0:
        count = max(MIN_QUEUE_READ, budget // len(active))
        still = []
        for chunk in _chunks(active, QUEUES_PER_PIPELINE):
            ranges = [StreamRange(read.ref, read.next, count=count) for read in chunk]
            for read, found in zip(chunk, stream_ranges(client, ranges), strict=True):
                columns.take(read, found)
                budget -= len(found)
                if len(found) == count:
                    still.append(read)
        active = still
    return reads, columns, bool(active)


def _read_planned(
    client: redis.Redis, cursors: dict[QueueRef, int], plan: dict[QueueRef, int]
) -> tuple[list[_QueueRead], _MessageColumns]:
    """Read exactly the planned range ``[cursor, planned end)`` of each queue."""
    reads = [_QueueRead(ref, cursors.get(ref, 0), cursors.get(ref, 0)) for ref in plan]
    columns = _MessageColumns()
    for chunk in _chunks(reads, QUEUES_PER_PIPELINE):
        ranges = [StreamRange(read.ref, read.start, plan[read.ref]) for read in chunk]
        for read, found in zip(chunk, stream_ranges(client, ranges), strict=True):
            columns.take(read, found)
    for read in reads:
        read.next = plan[read.ref]
    return reads, columns


def _save_plan(plan: dict[QueueRef, int]) -> None:
    """Record where the batch ends per queue before its files are written (a plan left
    by a failed call makes this fail on the unique names: the caller writes that one)."""
    with transaction.atomic():
        DataCursor.objects.bulk_create(
            [DataCursor(name=_plan_name(ref), position=end) for ref, end in plan.items()]
        )


def _report_gaps(reads: list[_QueueRead], cursors: dict[QueueRef, int]) -> None:
    """Log the offsets a stream lost to trimming before the writer read them."""
    for read in reads:
        if read.skipped:
            log.info("analytics writer: %s: moved past %d foreign entries", read.ref, read.skipped)
        first = read.first if read.first is not None else read.next
        if first <= read.start:
            continue
        missed = first - read.start
        if read.ref in cursors:
            log.warning(
                "analytics writer: %s offsets %d..%d were trimmed from the stream before "
                "they were written (%d missed); continuing at %d",
                read.ref,
                read.start,
                first - 1,
                missed,
                first,
            )
        else:
            log.info("analytics writer: %s starts at offset %d (trimmed before)", read.ref, first)


def _chunks(items: list[_QueueRead], size: int) -> Iterator[list[_QueueRead]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
