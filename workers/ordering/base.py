"""The contract an ordering mode fulfils: one owned queue, consumed in steps.

What a mode is handed (``WorkerEnv`` + the queue's ``QueueRef`` + its fencing token):
- the subscription, the broker, the event log, the timings, the consumer id, the handler,
  the group its offsets are kept under (a per-consumer name for broadcasting) and, under
  key ordering, the subscription's lane pool.

What it implements:
- ``restore()``: read where to start from Redis (never from local memory: the broker is
  the truth after every grant).
- ``consume()``: a generator that runs until ``stopping`` is set, yielding a
  ``runner.Wait`` after each bounded piece of work (a read, a batch) and wherever it would
  block (no data, a pause, a stale lock): a runner (``scheduler.QueuePool``,
  ``cluster_pool.ClusterQueuePool`` or ``runner.QueueThreads``) steps it from one thread
  at a time. Invoke the handler only through ``invoke()`` and only while
  ``lock_valid()``; stop taking new messages once stopping.
- ``finish()``: after ``consume()`` returns (or raised): wait for messages in progress and
  write what completed, under the fence. Nothing may be written after it returns.
- ``commit_point()``: the committed offset as the mode sees it (reported on release).
- ``snapshot()``: what the consumer's card shows of the queue (``QueueSnapshot``).

What it must call back:
- every fenced write (commit, dead letter, park, unpark) goes through ``accepted()``,
  the one accept path: on success it records the commit event; on a refusal it reports
  ``fencing_rejected`` and drops the queue without unlocking (the lock is not ours).
- events through ``emit()``, which stamps the queue, group, token and consumer.

When it may commit: only with its token, only what is done (handled or dead-lettered;
parked under ``hold``), and never an older snapshot after a newer one. The base class
unlocks the queue after ``finish()`` unless the queue was fenced or lost.
See docs/semantics.md and docs/fencing.md.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from lockstep.workers import events as ev
from lockstep.workers.broker import Broker, CommitResult
from lockstep.workers.cards import QueueSnapshot
from lockstep.workers.config import Subscription, Timings
from lockstep.workers.events import EventLog
from lockstep.workers.handler_log import HandlerLog
from lockstep.workers.lanes import LanePool
from lockstep.workers.message import (
    MAX_RECORDED_ATTEMPTS,
    ORIGINAL_OFFSET_HEADER,
    REPLAY_ID_HEADER,
    REPLAY_OF_HEADER,
    ConsumeContext,
    ConsumeStatus,
    FailedAttempt,
    Handler,
    MalformedEntry,
    Message,
    decode_entry,
    foreign_entry,
    parse_offset,
)
from lockstep.workers.ordering.commits import Commits
from lockstep.workers.ordering.runner import (
    FINISHING,
    HAND_COUNT,
    Handed,
    QueueThreads,
    Runner,
    Wait,
)
from lockstep.workers.outage import REDIS_DOWN, redis_outage
from lockstep.workers.refs import QueueRef
from lockstep.workers.scripts import NodeLate

log = logging.getLogger(__name__)

Item = Message | MalformedEntry
# A dead letter keeps the end of each attempt's traceback: the frames nearest the error.
MAX_TRACEBACK_CHARS = 4000


@dataclass
class WorkerEnv:
    """What every queue worker of one subscription shares."""

    sub: Subscription
    broker: Broker
    events: EventLog
    timings: Timings
    consumer_id: str
    handler: Handler
    offset_group: str  # group for clustering; a per-consumer name for broadcasting
    lanes: LanePool | None = None  # key ordering only
    # Where handler failures are logged, rate-limited; one per consumer process.
    handler_log: HandlerLog = field(default_factory=HandlerLog)
    # Who steps the queue workers: a thread each unless given (``runner``).
    runner: Runner | None = None
    # Key ordering only: who writes the queues' periodic commits, all in one round trip.
    commits: Commits | None = None


@dataclass(frozen=True)
class Attempt:
    """One handler invocation's result. ``suspend_s`` is the context's suspend time (the
    handler may have changed it: ``suspend_chosen``)."""

    status: ConsumeStatus
    error: str
    suspend_s: float
    suspend_chosen: bool
    traceback: str = ""  # when the handler raised
    ended_ms: int = 0

    @property
    def succeeded(self) -> bool:
        return self.status is ConsumeStatus.SUCCESS


class FailureLog:
    """The last failed attempts of each failing message, by offset, for its dead letter.
    In memory, as reconsume counts are: a new owner starts both afresh. Each offset is
    written by one thread at a time (the queue's, or its key's lane)."""

    def __init__(self) -> None:
        self._by_offset: dict[int, list[FailedAttempt]] = {}

    def record(self, offsets: Iterable[int], attempt: Attempt) -> None:
        entry = FailedAttempt(
            at_ms=attempt.ended_ms, error=attempt.error, traceback=attempt.traceback
        )
        for offset in offsets:
            kept = self._by_offset.setdefault(offset, [])
            kept.append(entry)
            del kept[:-MAX_RECORDED_ATTEMPTS]

    def take(self, offset: int) -> list[FailedAttempt]:
        """The offset's attempts, forgetting them (it succeeded or is dead-lettered)."""
        return self._by_offset.pop(offset, []) if self._by_offset else []


class QueueWorker(ABC):
    """One owned queue under one ordering mode; see the module docstring for the contract.

    Control (from the rebalance thread): ``start``, ``drop``, ``join``, ``renewed`` and
    the ``alive`` / ``dropped`` / ``releasing`` properties. Every change of what the
    worker waits for (a renewal, a drop) pokes its runner, which ends the current wait."""

    # ``runner.Steppable``: a mode whose step after a wait for data only hands the entries
    # on may have it run by the thread that read them.
    inline_data_steps = False

    def __init__(self, env: WorkerEnv, ref: QueueRef, token: int | None) -> None:
        self.env = env
        self.ref = ref
        self.token = token  # None: broadcasting, no locks
        self.last_locked = time.monotonic()
        self.state = "starting"
        self.last_error = ""
        self.stop_reason = ""
        self.next_fetch = 0  # the next offset to read from the stream
        self._stopping = threading.Event()
        self._started = False
        self._stepped_out = threading.Event()
        self._runner: Runner = env.runner or QueueThreads(
            env.broker.client, env.timings.poll_block_s
        )
        self._release_lock = True
        # IDs of foreign entries at or above ``next_fetch`` already handed out: a read
        # from ``next_fetch`` returns them again, and they must be dead-lettered once.
        self._foreign_seen: set[bytes] = set()
        # The last read met only foreign entries already handed out: they stay in the
        # stream, so waiting for data would wake at once; wait for a while instead.
        self._only_foreign = False
        # The last read found fewer entries than it asked for: the stream ended there.
        self._read_to_end = False

    # -- the mode's part ---------------------------------------------------------------
    @abstractmethod
    def restore(self) -> None:
        """Read where to start (offsets, mode state) from Redis; set ``next_fetch``."""

    @abstractmethod
    def consume(self) -> Generator[Wait, Handed, None]:
        """Consume until ``stopping`` is set, in steps; the handler only through
        ``invoke``. A step's ``yield`` gives what its runner handed (``runner.Handed``):
        entries to pass to ``read``."""

    @abstractmethod
    def finish(self) -> None:
        """Wait for work in progress, then write what completed (fenced, through
        ``accepted``) unless ``release_lock`` is false. Runs even after a crash."""

    @abstractmethod
    def commit_point(self) -> int:
        """The committed offset as this mode sees it: every offset below it is done."""

    @abstractmethod
    def snapshot(self) -> QueueSnapshot:
        """The queue as the consumer's card shows it; called from the card thread."""

    # -- control (called from the rebalance thread) ----------------------------------
    def start(self) -> None:
        self._started = True
        self._runner.start(self)

    def drop(self, reason: str, *, release_lock: bool = True) -> None:
        """Ask the worker to stop after the work in progress; it writes what completed,
        then (when ``release_lock``) unlocks the queue on the broker."""
        if not self._stopping.is_set():
            self.stop_reason = reason
            self._release_lock = release_lock
            self._stopping.set()
            self._poke()

    def abandon(self, reason: str) -> None:
        """Stop without writing anything more and without unlocking, also when already
        dropped: after a write that failed on an unreachable Redis, what this worker holds
        in memory may be ahead of Redis, so only the stored state may be trusted. While
        the lock is still ours the rebalance loop starts the queue again from the store."""
        if not self._stopping.is_set():
            self.stop_reason = reason
        self._release_lock = False
        self._stopping.set()
        self._poke()

    def commit_failed(self, exc: Exception) -> None:
        """A commit round's write of this queue failed (it is written again by the next
        round or the final commit). A node that was only late (``scripts.NodeLate``) is
        left to the next round: starting the queue again from the store would only
        handle again what it handled since. An outage is told once and the queue starts
        again from the store (``redis_failed``); any other error is logged."""
        if isinstance(exc, NodeLate):
            return
        if isinstance(exc, REDIS_DOWN):
            self.redis_failed(exc)
        else:
            log.warning("commit of %s failed: %s", self.ref, exc)

    def redis_failed(self, exc: BaseException) -> None:
        """A Redis call of this queue failed because Redis is unreachable: told once per
        outage (workers.outage), then the queue starts again from the store."""
        redis_outage.failed(exc, f"queue {self.ref.topic}/{self.ref.queue}")
        self.abandon("redis unavailable")

    def join(self, timeout: float) -> bool:
        return not self._started or self._stepped_out.wait(timeout)

    @property
    def alive(self) -> bool:
        return self._started and not self._stepped_out.is_set()

    @property
    def dropped(self) -> bool:
        return self._stopping.is_set()

    @property
    def releasing(self) -> bool:
        """Dropped to be handed over (not lost): still finishing its message, after which
        it unlocks. Its lock must be kept alive until then."""
        return (
            self.token is not None and self._stopping.is_set() and self._release_lock and self.alive
        )

    @property
    def release_lock(self) -> bool:
        """False once the queue was fenced or lost: nothing more may be written for it."""
        return self._release_lock

    def renewed(self, at: float) -> None:
        """The rebalance thread renewed the lock at ``at``. Only a worker whose lock had
        gone stale is poked: it waits for this (``renewal_wait``); any other is left to
        its wait."""
        stale = not self.lock_valid()
        self.last_locked = at
        if stale:
            self._poke()

    def _poke(self) -> None:
        if self._started:
            self._runner.poke(self)

    def lock_valid(self) -> bool:
        if self.token is None:  # broadcasting: no locks
            return True
        return time.monotonic() - self.last_locked < self.env.timings.client_lock_expiry_s

    def renewal_wait(self) -> Wait | None:
        """While the client-side lock is stale, what to wait for (a renewal or a drop
        pokes it; at most a renew interval): nothing may be consumed until the rebalance
        thread renews the lock or drops the queue. ``None`` while the lock is valid."""
        if self.lock_valid():
            return None
        self.state = "lock_expired"
        return Wait(self.env.timings.lock_renew_interval_s)

    def read_to_end(self) -> bool:
        """Whether the last read found the end of the stream, so that a read now would
        find only what came since: a worker that handled all it read may wait for data
        at once (the wait ends at once if anything came). Never after a read that met
        only foreign entries: those stay in the stream and would end the wait at once."""
        return self._read_to_end and not self._only_foreign

    def data_wait(self, seconds: float | None = None) -> Wait:
        """What an idle queue waits for: an entry at ``next_fetch`` or later (or, after a
        read that met only foreign entries, ``poll_block_s``), at most ``seconds``."""
        if self._only_foreign:
            block = self.env.timings.poll_block_s
            return Wait(block if seconds is None else min(block, seconds))
        return Wait(seconds, data_from=self.next_fetch)

    @property
    def stopping(self) -> threading.Event:
        return self._stopping

    # -- services for the modes ------------------------------------------------------
    def read(self, count: int, handed: Handed = None) -> list[Item]:
        """The next entries of the queue from ``next_fetch`` on (at most ``count``), in
        offset order, decoded (a malformed entry comes back as ``MalformedEntry``);
        advances ``next_fetch``. An entry another writer put there comes back once, as a
        foreign ``MalformedEntry``, and does not advance ``next_fetch``. Never blocks.
        ``handed`` (what the runner read while the worker waited for data) is taken
        instead of a read of Redis."""
        if handed is None:
            found = self.env.broker.read_from(self.ref, self.next_fetch, count)
            self._read_to_end = len(found) < count
        else:
            found = handed[:count]
            self._read_to_end = len(handed) < HAND_COUNT and len(handed) <= count
        out: list[Item] = []
        sequence: int | None = None  # read only when an entry leaves a gap
        for entry_id, fields in found:
            if entry_id in self._foreign_seen:
                continue
            item = self._decode(entry_id, fields)
            if not _is_foreign(item) and item.offset > self.next_fetch:
                if sequence is None:
                    sequence = self.env.broker.max_offset(self.ref)
                if item.offset >= sequence:  # produce.lua takes the offset before its XADD
                    item = foreign_entry(entry_id, fields, "is beyond the queue's sequence")
            if _is_foreign(item):
                self._foreign_seen.add(entry_id)
            elif item.offset < self.next_fetch:
                continue
            else:
                self.next_fetch = item.offset + 1
            out.append(item)
        if self._foreign_seen:  # almost always empty: not rebuilt on every read
            self._foreign_seen = {
                i for i in self._foreign_seen if parse_offset(i) >= self.next_fetch
            }
        self._only_foreign = bool(found) and not out
        return out

    def _decode(self, entry_id: bytes, fields: dict[bytes, bytes]) -> Item:
        try:
            return decode_entry(self.ref, entry_id, fields)
        except MalformedEntry as bad:
            return bad

    def invoke(self, batch: Sequence[Message], key: str = "") -> Attempt:
        """Run the handler on ``batch``; an exception or a result that is not a
        ``ConsumeStatus`` counts as a suspend with a readable reason, and is logged by the
        host process, rate-limited (``HandlerLog``); the caller records the event. Both
        orderings call the handler only through here. Reports ``lock_margin_overrun``
        when the client-side lock expired while it ran."""
        env = self.env
        ctx = ConsumeContext(
            env.sub.topic,
            env.sub.group,
            self.ref.queue,
            env.consumer_id,
            self.token or 0,
            env.sub.suspend_ms,
        )
        started = time.monotonic()
        trace = ""
        try:
            result = env.handler(batch, ctx)
        except Exception as exc:
            status, error = ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT, describe(exc)
            trace = traceback.format_exc()[-MAX_TRACEBACK_CHARS:]
            env.handler_log.raised(self.ref, env.sub.group, env.sub.handler_name, batch, exc, error)
        else:
            status, error = status_of(result)
            if status is not ConsumeStatus.SUCCESS:
                # An asked-for suspend is flow control (DEBUG); any other value a bug.
                requested = as_status(result) is ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                env.handler_log.returned(
                    self.ref, env.sub.group, env.sub.handler_name, batch, error, requested=requested
                )
        if not self.lock_valid():
            self.emit(
                ev.LOCK_MARGIN_OVERRUN,
                key=key,
                details={
                    "offsets": [batch[0].offset, batch[-1].offset],
                    "handler_seconds": round(time.monotonic() - started, 3),
                    "client_lock_expiry": env.timings.client_lock_expiry_s,
                },
            )
        chosen = ctx.suspend_ms != env.sub.suspend_ms
        ended_ms = int(time.time() * 1000) if trace or status is not ConsumeStatus.SUCCESS else 0
        return Attempt(status, error, ctx.suspend_seconds, chosen, trace, ended_ms)

    def accepted(
        self, result: CommitResult, offset: int, completed: str = "", **details: Any
    ) -> bool:
        """The one accept path for fenced writes: True when Redis took the write (its
        commit is recorded as an event with ``details``); on a refusal, report it and drop
        the queue without unlocking."""
        env = self.env
        if result.ok:
            env.events.committed(
                self.ref, env.sub.group, self.token, env.consumer_id, offset, **details
            )
            return True
        rejected: dict[str, Any] = {
            "offset": offset,
            "current_token": result.current_token,
            "outcome": result.outcome.name.lower(),
        }
        if completed:
            rejected["completed"] = completed
        self.emit(ev.FENCING_REJECTED, details=rejected)
        self.drop("fenced", release_lock=False)
        return False

    def emit(self, type_: str, **fields: Any) -> None:
        self.env.events.emit(
            type_,
            topic=self.ref.topic,
            group=self.env.sub.group,
            queue=self.ref.queue,
            token=self.token,
            consumer=self.env.consumer_id,
            **fields,
        )

    def report_dead_letter(
        self, message: Message, error: str, dlq_id: str, committed: int, **extra: Any
    ) -> None:
        """``dead_lettered``, once the fenced move was accepted."""
        details = {
            "offset": message.offset,
            "reconsume_times": message.reconsume_times,
            "error": error,
            "dlq_id": dlq_id,
            "committed": committed,
            **extra,
        }
        self.emit(ev.DEAD_LETTERED, key=message.key, details=details)

    def report_handled(self, message: Message) -> None:
        """Called for every message handled successfully: a replayed dead letter (linked
        by its headers) is reported as ``replay_succeeded``. Costs nothing for others."""
        headers = message.headers
        if headers and REPLAY_OF_HEADER in headers:
            details = {
                "dlq_id": str(headers[REPLAY_OF_HEADER]),
                "replay_id": str(headers.get(REPLAY_ID_HEADER, "")),
                "original_offset": headers.get(ORIGINAL_OFFSET_HEADER),
                "offset": message.offset,
            }
            self.emit(ev.REPLAY_SUCCEEDED, key=message.key, details=details)

    def report_malformed(self, bad: MalformedEntry, dlq_id: str) -> None:
        """``malformed_entry``, once the fenced move of the entry was accepted."""
        details = {"offset": bad.offset, "reason": bad.reason, "dlq_id": dlq_id}
        self.emit(ev.MALFORMED_ENTRY, details=details)

    def base_snapshot(self, retries: int, head_offset: int) -> QueueSnapshot:
        return {
            "state": self.state,
            "token": self.token,
            "last_error": self.last_error,
            "retries": retries,
            "head_offset": head_offset,
        }

    # -- the steps -------------------------------------------------------------------
    def steps(self) -> Generator[Wait, Handed, None]:
        """The worker's whole life, for its runner: restore, consume, finish, release."""
        try:
            try:
                self.restore()
                yield from self.consume()
            except REDIS_DOWN as exc:
                self.redis_failed(exc)
            except Exception:
                log.exception("queue %s loop crashed", self.ref)
                self.emit(ev.HANDLER_ERROR, details={"error": traceback.format_exc()[-2000:]})
                self.drop("crashed")
            # Finishing (waiting for messages in progress, the final commit) is a step of
            # its own, so it never runs within a data step run inline by a reader.
            yield FINISHING
        finally:
            try:
                self.finish()
            finally:
                self._release()

    def stepped_out(self) -> None:
        self._stepped_out.set()

    def _release(self) -> None:
        self.state = "stopped"
        env = self.env
        if self.token is None or not self._release_lock:
            return
        try:
            released = env.broker.unlock(self.ref, env.sub.group, env.consumer_id, self.token)
        except REDIS_DOWN as exc:
            # The lock then simply expires after its TTL.
            redis_outage.failed(exc, f"queue {self.ref.topic}/{self.ref.queue}")
            return
        except redis.RedisError:
            log.warning("could not unlock %s; it will expire", self.ref)
            return
        if released:
            self.emit(
                ev.LOCK_RELEASED,
                details={"reason": self.stop_reason, "committed": self.commit_point()},
            )


def _is_foreign(item: Item) -> bool:
    return isinstance(item, MalformedEntry) and item.foreign


def malformed_dead_letter(ref: QueueRef, group: str, bad: MalformedEntry) -> dict[str, Any]:
    """The dead-letter entry of a stream entry that does not decode as a message."""
    return {
        "topic": ref.topic,
        "queue": ref.queue,
        "offset": bad.offset,
        "key": bad.raw.get(b"k", b"").decode("utf-8", "replace"),
        "body": bad.raw.get(b"b", b""),
        "headers": "{}",
        "produced_at_ms": 0,
        "reconsume_times": 0,
        "group": group,
        "error": f"malformed entry: {bad.reason}",
    }


def status_of(result: object) -> tuple[ConsumeStatus, str]:
    """A handler's return value as a status and, for a suspend, a reason."""
    status = as_status(result)
    if status is None:
        return (
            ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT,
            f"handler returned {result!r}, expected a ConsumeStatus",
        )
    if status is ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT:
        # A handler asking to suspend raised nothing, but consume_failed events and dead
        # letters still need a reason an operator can read (an empty one reads as a bug).
        return status, f"handler returned {status.value}"
    return status, ""


def as_status(result: object) -> ConsumeStatus | None:
    """``result`` as a ``ConsumeStatus`` when it is one or names one (a plain string such
    as ``"SUCCESS"``); None for anything else (``None``, a typo, another type)."""
    if isinstance(result, str):  # a ConsumeStatus is a str too
        try:
            return ConsumeStatus(result)
        except ValueError:
            return None
    return None


def describe(exc: BaseException) -> str:
    """An exception as the one line (at most 2,000 characters) operators read."""
    lines = traceback.format_exception_only(type(exc), exc)
    return "".join(lines).strip()[:2000]
