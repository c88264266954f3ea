"""The ingester's writes: a batch's events and the counters they bump, in plain SQL.

Django's ``bulk_create`` compiles every field of every row through the ORM (and SQLite's
999-parameter limit cuts a 1,000-event batch into 14 statements), and a counter was an
ORM query of its own: that was most of an ingester's time, the database's own work a
small part. Here statements are built once, values are adapted by the connection's own
``ops`` (datetimes, JSON) so what is stored is what the ORM would have stored, and:

- SQLite: one prepared ``INSERT … ON CONFLICT (stream_id) DO NOTHING`` sent with
  ``executemany`` (a loop in C);
- PostgreSQL: ``COPY … FROM STDIN`` (psycopg's ``executemany`` would send a statement per
  row with its values quoted in Python, Django's cursors binding on the client);
- both: the counters in one multi-row upsert.

Every write here runs inside the caller's transaction (``ingest.store_batch``);
``expand_samples`` (a batch of lag samples → the rows stored for it) touches no database.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from typing import Any

from django.db import connection

from lockstep.dashboard.web.store.models import Event, EventCounter
from lockstep.workers.events import LAG_SAMPLED

log = logging.getLogger(__name__)

# Event fields in the order of the INSERT's columns (the database assigns ``id``).
EVENT_FIELDS = ("stream_id", "type", "ts", "topic", "group", "queue", "key", "token", "consumer")
# Stream IDs per ``IN (...)`` of the already-stored check: old SQLite builds allow 999
# parameters per statement.
KNOWN_CHUNK = 500
# Counter series per upsert statement: five parameters each, under the same 999.
COUNTER_CHUNK = 150
# A sample's queue must fit ``Event.queue`` (an IntegerField: 32 bits on every database).
MAX_QUEUE = 2**31 - 1
STREAM_ID_CHARS = 40  # ``Event.stream_id``'s max_length


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event as it is stored (``Event``'s fields, already cut to their lengths);
    ``model()`` makes the ``Event`` only when something needs one (the live pushes)."""

    stream_id: str
    type: str
    ts: datetime
    topic: str = ""
    group: str = ""
    queue: int | None = None
    key: str = ""
    token: int | None = None
    consumer: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def decoded(cls, stored_id: str, event: dict[str, Any]) -> StoredEvent:
        """From ``workers.events.decode_event``'s dict, known as ``stored_id``."""
        return cls(
            stored_id,
            event["type"][:40],
            datetime.fromtimestamp(event["ts_ms"] / 1000.0, tz=UTC),
            event["topic"][:128],
            event["group"][:128],
            event["queue"],
            event["key"][:256],
            event["token"],
            event["consumer"][:200],
            event["details"],
        )

    def model(self) -> Event:
        """An unsaved ``Event`` with these values. Positional, in the model's field order:
        Django's fast path, half the time keywords take (no defaults looked up)."""
        _check_model_order()
        make: Callable[..., Event] = Event  # (the stubs check positional fields one by one)
        return make(
            None,
            self.stream_id,
            self.type,
            self.ts,
            self.topic,
            self.group,
            self.queue,
            self.key,
            self.token,
            self.consumer,
            self.details,
        )


def expand_samples(event: StoredEvent) -> list[StoredEvent]:
    """The rows stored for ``event``: itself, unless it is a batch of lag samples (a
    ``lag_sampled`` event naming no queue whose details hold a list ``samples``, as
    ``monitor.tasks.sample_batches`` writes them). A batch is one row per sample, in its
    order, as a per-queue sample was stored before batching: the batch's type, time, topic
    and group, the sample's ``queue``, no consumer, the sample without ``queue`` as
    details, and the stream ID ``<the batch's stored id>/<queue>`` (unique: a batch stored
    again stores nothing twice). A sample that is no object, has no queue in
    0..``MAX_QUEUE``, repeats a queue of the batch or would make an ID longer than the
    column is skipped, the others kept, with one warning per batch. A ``lag_sampled``
    event naming a queue (an older beat's, or one written by hand) is stored as it is."""
    samples = event.details.get("samples")
    if event.type != LAG_SAMPLED or event.queue is not None or not isinstance(samples, list):
        return [event]
    rows: dict[str, StoredEvent] = {}
    for sample in samples:
        row = _sample_row(event, sample)
        if row is not None:
            rows.setdefault(row.stream_id, row)  # a queue repeated: its first sample
    if len(rows) < len(samples):
        log.warning(
            "ingester: %d of the %d lag samples of %s were skipped: no object, no queue in "
            "0..%d, a queue repeated, or a stream ID over %d characters",
            len(samples) - len(rows),
            len(samples),
            event.stream_id,
            MAX_QUEUE,
            STREAM_ID_CHARS,
        )
    return list(rows.values())


def _sample_row(batch: StoredEvent, sample: object) -> StoredEvent | None:
    """One sample of ``batch`` as its row; None for one that cannot be stored."""
    if not isinstance(sample, dict):
        return None
    queue = sample.get("queue")
    if not isinstance(queue, int) or isinstance(queue, bool) or not 0 <= queue <= MAX_QUEUE:
        return None
    stream_id = f"{batch.stream_id}/{queue}"
    if len(stream_id) > STREAM_ID_CHARS:  # cut, two samples' IDs could be one
        return None
    details = {k: v for k, v in sample.items() if k != "queue"}
    # Positional, as ``dataclasses.replace`` would not be: a tick is thousands of rows.
    b = batch
    return StoredEvent(
        stream_id, b.type, b.ts, b.topic, b.group, queue, b.key, b.token, "", details
    )


@cache
def _check_model_order() -> None:
    """``Event``'s fields must be ``id`` then this class's, in this class's order (``model``
    passes them by position): a field added to the model and not here fails loudly at the
    first push instead of taking a wrong value."""
    names = tuple(f.attname for f in Event._meta.concrete_fields)
    if names != ("id", *StoredEvent.__slots__):
        raise TypeError(f"StoredEvent's fields are not Event's: {names}")


@contextmanager
def write_turn() -> Iterator[None]:
    """Wrap a batch's transaction: on a SQLite file, this host's ingesters queue for their
    write transactions on an ``flock`` of ``<database>.ingest-lock``, and each connection
    commits with ``synchronous=NORMAL``. Elsewhere it does nothing.

    Why the queue: SQLite's busy handler polls with sleeps growing to 100 ms, so two
    ingesters waiting on each other's transactions that way spent most of their time
    asleep (two stored no more than one); a waiter on the ``flock`` wakes as soon as the
    holder commits. Other writers (the web side) still meet the busy handler as before.

    Why ``NORMAL``: in WAL mode it syncs at checkpoints, not at every commit, and may lose
    the last commits on a power failure, never the database's consistency. The cursor is
    in the same transaction as its events, so such a loss takes the cursor back with them:
    the events are read again from the stream and stored once. A sync per 1,000-event
    batch, with the write lock held, was a fifth of an ingester's time."""
    lock = _lock_file(connection.settings_dict["NAME"]) if connection.vendor == "sqlite" else None
    if lock is None:
        yield
        return
    _tune_sqlite()
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)


class _Tuned:
    """The SQLite connection last given ``synchronous=NORMAL`` (it is per connection, and
    Django replaces a connection after an error)."""

    connection: object = None


def _tune_sqlite() -> None:
    """Once per connection; not inside a transaction (SQLite refuses it there: a caller's
    own ``atomic`` block), where the batch commits as the connection is."""
    connection.ensure_connection()
    if _Tuned.connection is not connection.connection and not connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA synchronous = NORMAL")
        _Tuned.connection = connection.connection


@cache
def _lock_file(database: object) -> int | None:
    """The descriptor of ``<database>.ingest-lock`` (kept open for the process), or None for
    a database that is no plain file (in memory: tests)."""
    name = str(database)
    if not name or name == ":memory:" or name.startswith("file:") or "mode=memory" in name:
        return None
    return os.open(f"{name}.ingest-lock", os.O_RDWR | os.O_CREAT, 0o600)


def insert_new(events: list[StoredEvent]) -> list[StoredEvent]:
    """Insert the events not stored yet (by ``stream_id``); returns those, in order."""
    known = known_ids([e.stream_id for e in events])
    new = [e for e in events if e.stream_id not in known]
    if new and connection.vendor == "postgresql":
        _copy_events(new)
    elif new:
        _insert_events(new)
    return new


def _insert_events(events: list[StoredEvent]) -> None:
    """One prepared INSERT for all rows (SQLite runs ``executemany`` in C). A row that
    appeared meanwhile anyway is skipped by the unique ``stream_id``."""
    ops = connection.ops
    # A batch of samples is thousands of rows of one time: adapted once.
    times = {ts: ops.adapt_datetimefield_value(ts) for ts in {e.ts for e in events}}
    values = [
        (
            e.stream_id,
            e.type,
            times[e.ts],
            e.topic,
            e.group,
            e.queue,
            e.key,
            e.token,
            e.consumer,
            ops.adapt_json_value(e.details, None),
        )
        for e in events
    ]
    with connection.cursor() as cursor:
        cursor.executemany(_insert_event_sql(connection.vendor), values)


def _copy_events(events: list[StoredEvent]) -> None:
    """PostgreSQL: ``COPY ... FROM STDIN``, rows written by psycopg's C adapters. Its
    ``executemany`` sends a statement per row, each with its values quoted in Python
    (Django's cursors bind on the client): that was two thirds of the time. COPY has no
    ``ON CONFLICT``: ``known_ids`` ran in this same transaction, after the cursor's row
    lock that every writer of the stream takes first, so no one else can have stored
    these IDs since (a writer without that lock makes the batch fail with an
    ``IntegrityError``; the ingester backs off and the next try skips what it finds)."""
    columns = ", ".join(_column(Event, name) for name in (*EVENT_FIELDS, "details"))
    # psycopg's own cursor raises psycopg's errors: wrapped, they are Django's
    # DatabaseError the ingester backs off on, as from any other query.
    with connection.cursor() as cursor, connection.wrap_database_errors:
        raw = cursor.cursor  # psycopg's own cursor, inside Django's transaction
        with raw.copy(f"COPY {_table(Event)} ({columns}) FROM STDIN") as copy:
            for e in events:
                copy.write_row(
                    (
                        e.stream_id,
                        e.type,
                        e.ts,
                        e.topic,
                        e.group,
                        e.queue,
                        e.key,
                        e.token,
                        e.consumer,
                        json.dumps(e.details),  # text for the jsonb column
                    )
                )


def known_ids(ids: list[str]) -> set[str]:
    """Which of ``ids`` are stored already: PostgreSQL takes them as one array parameter;
    SQLite as ``IN (...)`` lists of at most ``KNOWN_CHUNK``."""
    table, column = _table(Event), _column(Event, "stream_id")
    chunks: list[list[Any]]
    if connection.vendor == "postgresql":
        chunks, condition = [[ids]], f"{column} = ANY(%s)"
    else:
        chunks = [ids[i : i + KNOWN_CHUNK] for i in range(0, len(ids), KNOWN_CHUNK)]
        condition = ""
    known: set[str] = set()
    with connection.cursor() as cursor:
        for chunk in chunks:
            where = condition or f"{column} IN ({', '.join(['%s'] * len(chunk))})"
            cursor.execute(f"SELECT {column} FROM {table} WHERE {where}", chunk)
            known.update(str(row[0]) for row in cursor.fetchall())
    return known


def bump_counters(amounts: Iterable[tuple[tuple[str, str, str, int], int]]) -> None:
    """Add each amount to its counter series (name, topic, group, queue), creating the
    series at that amount: one multi-row upsert per ``COUNTER_CHUNK`` series. Sorted, so
    two ingesters bumping the same series lock them in the same order (PostgreSQL would
    otherwise be free to find a deadlock)."""
    totals: Counter[tuple[str, str, str, int]] = Counter()
    for series, amount in amounts:
        totals[series] += amount
    rows = [(*series, amount) for series, amount in sorted(totals.items())]
    with connection.cursor() as cursor:
        for i in range(0, len(rows), COUNTER_CHUNK):
            chunk = rows[i : i + COUNTER_CHUNK]
            params = [value for row in chunk for value in row]
            cursor.execute(_bump_counter_sql(len(chunk)), params)


@cache
def _insert_event_sql(vendor: str) -> str:
    """``vendor`` keys the cache: the quoting is the connection's."""
    del vendor
    columns = ", ".join(_column(Event, name) for name in (*EVENT_FIELDS, "details"))
    marks = ", ".join(["%s"] * (len(EVENT_FIELDS) + 1))
    return (
        f"INSERT INTO {_table(Event)} ({columns}) VALUES ({marks}) "
        f"ON CONFLICT ({_column(Event, 'stream_id')}) DO NOTHING"
    )


def _bump_counter_sql(rows: int) -> str:
    table = _table(EventCounter)
    series = ", ".join(_column(EventCounter, n) for n in ("name", "topic", "group", "queue"))
    value = _column(EventCounter, "value")
    values = ", ".join(["(%s, %s, %s, %s, %s)"] * rows)
    return (
        f"INSERT INTO {table} ({series}, {value}) VALUES {values} "
        f"ON CONFLICT ({series}) DO UPDATE SET {value} = {table}.{value} + excluded.{value}"
    )


def _table(model: type[Event] | type[EventCounter]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _column(model: type[Event] | type[EventCounter], name: str) -> str:
    column = getattr(model._meta.get_field(name), "column", None)
    if not isinstance(column, str):  # a relation, not a column: a bug here
        raise TypeError(f"{model.__name__}.{name} is no column")
    return connection.ops.quote_name(column)
