"""Sync: the runtime's dead letters (Redis) → ``DeadLetter`` records (database).

Contract:

- **Copied once.** Each (topic, queue, group) dead-letter stream is read, through
  ``workers.inspect``, after a cursor kept in the database (``SyncCursor``); the records
  copied from one read and the advanced cursor are stored in one transaction, and the
  records are unique per stream entry, so a sync killed at any point, or run twice, or
  two syncs at once, store every dead letter exactly once.
- **Bounded.** One call copies at most ``limit`` dead letters; ``SyncResult.more`` says
  there is more to copy (the next call goes on from the cursors).
- **Dead again.** A dead letter whose ``lockstep-replay-of`` header names a record of the
  same stream (it was a replay of that one and failed again) moves that record to
  ``dead_again``, with a ``StatusChange`` row; the new record starts ``dead``.
- **Runtime reports.** Events the ingester stored (``dead_letter_replayed``,
  ``dead_letter_discarded``, ``replay_succeeded``) move their record to ``replayed``,
  ``discarded``, ``succeeded`` (only forward: see ``models.TRANSITIONS``). They are read
  after a cursor on ``Event.id``; the ingester is the only writer of events and commits
  its batches one after another, so ids below the highest committed one never appear
  later. Events are applied before streams are read, so a replay's ``replayed`` comes
  before its ``dead_again`` when both are there.

- **Reconciled with Redis.** A record still ``dead`` whose stream entry is no longer in
  Redis was replayed or discarded without its event reaching the database (the event
  stream was trimmed, or the ingester recorded a gap): it moves to ``gone``
  (``reconcile_waiting``, a bounded batch per call, round-robin over the waiting
  records; the detail page checks its own record at once). A late event still moves it
  on to ``replayed`` / ``discarded``. Records in ``replay_pending`` are left to the
  action that holds them.

Where it runs: the Celery beat task ``dashboard.deadletters.tasks.sync_dead_letters``
(every ``LOCKSTEP_DEAD_LETTER_SYNC_SECONDS``) and, before it answers, ``manage.py dlq``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis
from django.db import IntegrityError, transaction
from django.db.models import Max

from lockstep.dashboard.deadletters.models import (
    GROUP_MAX_LENGTH,
    KEY_MAX_LENGTH,
    DeadLetter,
    Status,
    StatusChange,
    SyncCursor,
)
from lockstep.dashboard.web.store.models import Event
from lockstep.workers import events as ev
from lockstep.workers.inspect import DeadLetter as RuntimeDeadLetter
from lockstep.workers.inspect import (
    dead_letter_streams,
    dead_letters_present,
    get_dead_letter,
    newest_dead_letter_ids,
    read_dead_letters,
)
from lockstep.workers.message import REPLAY_ID_HEADER
from lockstep.workers.redis_types import entry_id_order
from lockstep.workers.refs import QueueRef

log = logging.getLogger(__name__)

# One call copies at most this many dead letters: a beat tick stays within a few seconds
# even when a poison flood left a large backlog, which the next ticks then catch up.
SYNC_LIMIT = 10_000
# Entries per stream read: the runtime's default page (``read_dead_letters``).
STREAM_BATCH = 500
# Events examined per call; status reports are rare next to the other event types.
EVENT_BATCH = 1_000
EVENTS_CURSOR = "events"
# Waiting records checked against Redis per call (one XRANGE each, pipelined by nothing:
# a few milliseconds per hundred); the cursor goes round, so every one is checked within
# waiting / RECONCILE_BATCH sync ticks.
RECONCILE_BATCH = 200
RECONCILE_CURSOR = "reconcile"
GONE_NOTE = "no longer in its dead-letter stream; the event saying why was lost"

# Event type -> the status it reports.
STATUS_EVENTS = {
    ev.DEAD_LETTER_REPLAYED: Status.REPLAYED,
    ev.DEAD_LETTER_DISCARDED: Status.DISCARDED,
    ev.REPLAY_SUCCEEDED: Status.SUCCEEDED,
}


@dataclass
class SyncResult:
    copied: int = 0  # new records
    dead_again: int = 0  # records moved to dead_again by a new record
    status_changes: int = 0  # records moved by runtime events or reconciled with Redis
    more: bool = False  # the limit was reached: call again to copy the rest


def sync_dead_letters(
    client: redis.Redis, *, group: str | None = None, limit: int = SYNC_LIMIT
) -> SyncResult:
    """Apply new runtime events, then copy up to ``limit`` new dead letters of every
    stream (of ``group``'s streams only, when given)."""
    result = SyncResult(status_changes=apply_runtime_events())
    result.status_changes += reconcile_waiting(client)
    cursors = dict(SyncCursor.objects.values_list("name", "last_id"))
    for ref, stream_group, after in _streams_with_news(client, group, cursors):
        if result.copied >= limit:
            result.more = True
            break
        name = cursor_name(ref, stream_group)
        _sync_stream(client, ref, stream_group, name, after, limit, result)
    return result


def _streams_with_news(
    client: redis.Redis, group: str | None, cursors: dict[str, str]
) -> list[tuple[QueueRef, str, str]]:
    """The (queue, group, cursor) of every dead-letter stream (of ``group``'s, when given)
    whose newest entry is past its cursor, found in one pipelined round trip per thousand
    streams: a fleet of 16,384 (queue, group) pairs cost a sync a round trip each, and it
    took minutes on a loaded machine while the worker's other tasks waited."""
    pairs = []
    for ref, stream_group in dead_letter_streams(client):
        if group is not None and stream_group != group:
            continue
        if len(stream_group) > GROUP_MAX_LENGTH:
            log.warning("dead-letter sync: group name too long, skipped: %.80s…", stream_group)
            continue
        pairs.append((ref, stream_group))
    out = []
    for (ref, stream_group), newest in zip(
        pairs, newest_dead_letter_ids(client, pairs), strict=True
    ):
        after = cursors.get(cursor_name(ref, stream_group), "0-0")
        if newest is not None and entry_id_order(newest) > entry_id_order(after):
            out.append((ref, stream_group, after))
    return out


def sync_all(client: redis.Redis, *, group: str | None = None, rounds: int = 100) -> SyncResult:
    """``sync_dead_letters`` until nothing is left (at most ``rounds`` calls)."""
    total = SyncResult()
    for _ in range(rounds):
        step = sync_dead_letters(client, group=group)
        total.copied += step.copied
        total.dead_again += step.dead_again
        total.status_changes += step.status_changes
        total.more = step.more
        if not step.more:
            break
    return total


def cursor_name(ref: QueueRef, group: str) -> str:
    return f"dlq {ref.topic} {ref.queue} {group}"


def _sync_stream(
    client: redis.Redis,
    ref: QueueRef,
    group: str,
    name: str,
    after: str,
    limit: int,
    result: SyncResult,
) -> None:
    while result.copied < limit:
        want = min(STREAM_BATCH, limit - result.copied)
        letters = read_dead_letters(client, ref, group, after, count=want)
        if not letters:
            return
        try:
            copied, dead_again = store_letters(ref, group, letters, name)
        except IntegrityError:
            # Another sync stored (some of) these at the same moment: its cursor moved on.
            log.info("dead-letter sync: %s was copied concurrently; skipped this round", name)
            return
        result.copied += copied
        result.dead_again += dead_again
        after = letters[-1].id
        if len(letters) < want:
            return
    result.more = True


def store_letters(
    ref: QueueRef, group: str, letters: Sequence[RuntimeDeadLetter], name: str
) -> tuple[int, int]:
    """Store the records of ``letters`` (one read of one stream, oldest first) that are not
    stored yet, mark the dead letters they replayed ``dead_again`` and advance the
    stream's cursor past them, in one transaction. Returns (copied, dead again)."""
    stream = DeadLetter.objects.filter(topic=ref.topic, group=group, queue=ref.queue)
    with transaction.atomic():
        known = set(
            stream.filter(dlq_id__in=[d.id for d in letters]).values_list("dlq_id", flat=True)
        )
        new = [record_of(d) for d in letters if d.id not in known]
        DeadLetter.objects.bulk_create(new)
        _with_ids(stream, new)
        StatusChange.objects.bulk_create(
            StatusChange(record_id=r.pk, status=Status.DEAD, at=r.dead_at, note=_dead_note(r))
            for r in new
        )
        dead_again = sum(_mark_dead_again(stream, r) for r in new if r.replay_of)
        SyncCursor.objects.update_or_create(name=name, defaults={"last_id": letters[-1].id})
    return len(new), dead_again


def _with_ids(stream: Any, records: list[DeadLetter]) -> None:
    """Ids of freshly bulk-created records, for a database that does not return them."""
    missing = {r.dlq_id: r for r in records if r.pk is None}
    if missing:
        for pk, dlq_id in stream.filter(dlq_id__in=list(missing)).values_list("pk", "dlq_id"):
            missing[dlq_id].pk = pk


def _dead_note(record: DeadLetter) -> str:
    return f"dead-lettered after {record.reconsume_times} retries"


def _mark_dead_again(stream: Any, record: DeadLetter) -> int:
    original = stream.filter(dlq_id=record.replay_of).first()
    if original is None:
        return 0
    moved = original.move_to(
        Status.DEAD_AGAIN,
        request_id=str(record.headers.get(REPLAY_ID_HEADER, "")),
        note=f"the replay failed again: dead letter {record.pk}",
        at=record.dead_at,
    )
    return int(moved)


def record_of(letter: RuntimeDeadLetter) -> DeadLetter:
    """The record of one stream entry. Text is stored without NUL characters (PostgreSQL
    refuses them); a key longer than ``KEY_MAX_LENGTH`` is cut; a damaged entry without
    a dead-letter time is dated by its stream ID (Redis time of the ``XADD``)."""
    dead_at_ms = letter.dead_at_ms or int(letter.id.split("-", 1)[0] or 0)
    return DeadLetter(
        topic=letter.topic,
        group=letter.group,
        queue=letter.queue,
        dlq_id=letter.id,
        offset=letter.offset,
        key=_clean(letter.key)[:KEY_MAX_LENGTH],
        status=Status.DEAD,
        error=_clean(letter.error),
        reconsume_times=letter.reconsume_times,
        produced_at=from_ms(letter.produced_at_ms),
        dead_at=from_ms(dead_at_ms),
        headers=_clean_json(letter.headers_dict),
        body=letter.body,
        body_size=len(letter.body),
        attempts=_clean_json([dict(a) for a in letter.attempts]),
        ordering=letter.ordering[:8],
        after_dlq=letter.after_dlq[:12],
        replay_of=_clean(letter.replay_of)[:40],
    )


def from_ms(ms: int) -> datetime:
    try:
        return datetime.fromtimestamp(ms / 1000.0, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return datetime.fromtimestamp(0, tz=UTC)


def _clean(text: str) -> str:
    return text.replace("\x00", "\ufffd")


def _clean_json(value: Any) -> Any:
    """``value`` as JSON would carry it, without NUL characters in any string."""
    text = json.dumps(value, default=str)
    if "\\u0000" in text:
        text = text.replace("\\u0000", "\\ufffd")
    return json.loads(text)


# ---- reconciliation with Redis -----------------------------------------------------------


def reconcile_waiting(client: redis.Redis, *, limit: int = RECONCILE_BATCH) -> int:
    """Check up to ``limit`` records still ``dead`` (after the reconcile cursor, by id)
    against their stream entries; move those no longer in Redis to ``gone``. Returns how
    many moved. Runs after ``apply_runtime_events``, so an event that did arrive wins."""
    cursor, _ = SyncCursor.objects.get_or_create(name=RECONCILE_CURSOR, defaults={"last_id": "0"})
    after = int(cursor.last_id) if cursor.last_id.isdigit() else 0
    records = list(
        DeadLetter.objects.filter(status=Status.DEAD, pk__gt=after).order_by("pk")[:limit]
    )
    present = dead_letters_present(client, [(_ref(r), r.group, r.dlq_id) for r in records])
    gone = [r for r, here in zip(records, present, strict=True) if not here]
    moved = sum(r.move_to(Status.GONE, note=GONE_NOTE) for r in gone)
    # A full batch: go on after it next time; otherwise start again from the first.
    cursor.last_id = str(records[-1].pk if len(records) == limit else 0)
    cursor.save(update_fields=["last_id", "updated_at"])
    return moved


def reconcile_record(client: redis.Redis, record: DeadLetter) -> bool:
    """Move ``record`` to ``gone`` when it is ``dead`` here but its entry is no longer in
    its dead-letter stream (``workers.inspect.get_dead_letter``). Returns whether it
    moved (a conditional update: an action that took it meanwhile wins)."""
    if record.status != Status.DEAD:
        return False
    if get_dead_letter(client, _ref(record), record.group, record.dlq_id) is not None:
        return False
    return record.move_to(Status.GONE, note=GONE_NOTE)


def _ref(record: DeadLetter) -> QueueRef:
    return QueueRef(record.topic, record.queue)


# ---- runtime events ----------------------------------------------------------------------


def apply_runtime_events(limit: int = EVENT_BATCH) -> int:
    """Move records by the status events stored after the events cursor (at most
    ``limit`` of them); returns how many records moved."""
    with transaction.atomic():
        cursor, _ = SyncCursor.objects.get_or_create(name=EVENTS_CURSOR, defaults={"last_id": "0"})
        after = int(cursor.last_id) if cursor.last_id.isdigit() else 0
        upper = Event.objects.aggregate(top=Max("pk"))["top"] or 0
        if upper <= after:
            return 0
        events = list(
            Event.objects.filter(pk__gt=after, pk__lte=upper, type__in=STATUS_EVENTS).order_by(
                "pk"
            )[:limit]
        )
        moved = sum(_apply(e) for e in events)
        # Examined up to ``upper`` unless the batch was full: then up to its last event.
        cursor.last_id = str(events[-1].pk if len(events) == limit else upper)
        cursor.save(update_fields=["last_id", "updated_at"])
    return moved


def _apply(event: Event) -> int:
    details = event.details if isinstance(event.details, dict) else {}
    dlq_id = details.get("dlq_id")
    if not isinstance(dlq_id, str) or not dlq_id or event.queue is None:
        return 0
    record = DeadLetter.objects.filter(
        topic=event.topic, group=event.group, queue=event.queue, dlq_id=dlq_id
    ).first()
    if record is None:
        return 0
    moved = record.move_to(
        STATUS_EVENTS[event.type],
        actor=str(details.get("actor", "") or ""),
        request_id=str(details.get("replay_id", "") or ""),
        note=_event_note(event.type, details),
        at=event.ts,
    )
    return int(moved)


def _event_note(type_: str, details: dict[str, Any]) -> str:
    if type_ == ev.DEAD_LETTER_REPLAYED:
        outcome = details.get("outcome", "")
        new_offset = details.get("new_offset")
        where = f" at offset {new_offset}" if new_offset is not None else ""
        return f"replayed ({outcome}{where})"
    if type_ == ev.DEAD_LETTER_DISCARDED:
        reason = details.get("reason", "")
        return f"discarded: {reason}" if reason else "discarded"
    return f"handled at offset {details.get('offset')}"
