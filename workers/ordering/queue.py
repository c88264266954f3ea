"""Queue ordering: one batch of a queue at a time (RocketMQ's
``ConsumeMessageOrderlyService.ConsumeRequest`` together with the queue's ``ProcessQueue``).

Beyond the base contract:
- At most one thread steps a queue's loop at a time in a process (its runner is the
  queue's ``MessageQueueLock``); ``consume_lock`` is held exactly while the handler runs
  and its result is processed, so a release never happens in the middle of a message.
- The handler gets up to ``batch_size`` messages in offset order. On success the offset
  after the batch becomes the handled position; on a suspend every message of the batch
  has its reconsume count bumped and the queue pauses, then retries the same batch; a
  message at ``max_reconsume_times`` is dead-lettered and committed past in one fenced
  step.
- Committed offset = the smallest offset not yet done (handled or dead-lettered). The
  handled position is committed (fenced) every ``commit_interval_ms`` by the
  subscription's commit rounds (``commits.Commits``: every queue whose position moved,
  in one round trip), at once for the queue's first batch and for a batch that outlived
  the client-side lock, before a suspend, and in ``finish`` before the queue is
  unlocked; a dead-letter move commits it with itself. With ``commit_interval_ms = 0``
  every batch is committed when it ends. Broadcasting (no fence) commits its own: an
  idle queue waits for data at most until its interval has passed, and commits. A crash
  redelivers at most what was handled since the last commit (docs/semantics.md §9).
See docs/semantics.md.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Generator
from typing import Any

from lockstep.workers import events as ev
from lockstep.workers.broker import Commit, CommitResult, dead_letter_entry
from lockstep.workers.cards import QueueSnapshot
from lockstep.workers.config import UNBOUNDED
from lockstep.workers.message import MalformedEntry, Message
from lockstep.workers.ordering.base import (
    FailureLog,
    Item,
    QueueWorker,
    WorkerEnv,
    malformed_dead_letter,
)
from lockstep.workers.ordering.commits import held_snapshot
from lockstep.workers.ordering.runner import READY, Handed, Wait
from lockstep.workers.outage import REDIS_DOWN
from lockstep.workers.refs import QueueRef

# Entries read per round trip: enough to amortise the read over many batches, bounded so a
# dropped queue frees its memory fast.
PREFETCH = 64


class QueueOrderingWorker(QueueWorker):
    def __init__(self, env: WorkerEnv, ref: QueueRef, token: int | None) -> None:
        super().__init__(env, ref, token)
        self.consume_lock = threading.Lock()
        self.buffer: deque[Item] = deque()
        self.paused_until = 0.0
        self.failures = FailureLog()
        self._interval_s = env.sub.commit_interval_ms / 1000.0
        self._unwritten: int | None = None  # handled position not yet committed
        self._commit_due = 0.0
        # The subscription's commit rounds write the periodic commits (fenced queues, an
        # interval set); the queue writes its own otherwise (``_idle_commit``).
        self._rounds = env.commits if token is not None and self._interval_s > 0 else None
        # Held from a round's snapshot of ``_unwritten`` until its answer, and by the
        # queue's own fenced writes: an older position never lands after a newer one.
        self._commit_lock = threading.Lock()
        self._mutex = threading.Lock()  # ``_unwritten`` and ``_closed``, for the rounds
        self._closed = False  # the final commit was written: the rounds write no more

    # -- the contract ----------------------------------------------------------------
    def restore(self) -> None:
        env = self.env
        self.next_fetch = env.broker.read_offset(self.ref, env.offset_group).committed
        if self._rounds is not None:
            self._rounds.add(self)

    def consume(self) -> Generator[Wait, Handed, None]:
        t = self.env.timings
        streak_start = time.monotonic()
        handed: Handed = None
        while not self.stopping.is_set():
            now = time.monotonic()
            renewal = self.renewal_wait()
            if renewal is not None:
                handed = yield renewal
                continue
            if self.paused_until > now:
                self.state = "suspended"
                handed = yield Wait(self.paused_until - now)
                continue
            if not self.buffer and not self._fill(handed):
                self.state = "idle"
                streak_start = time.monotonic()
                handed = yield self.data_wait(self._idle_commit())
                continue
            handed = None
            self.state = "consuming"
            self._consume_head()
            if time.monotonic() - streak_start > t.max_continuous_s:
                # RocketMQ yields a queue consumed continuously for 60 s so others run.
                handed = yield Wait(t.continuous_yield_s)
                streak_start = time.monotonic()
            elif self.buffer or not self.read_to_end():
                handed = yield READY  # the other queues of the runner get their turn
            # Else all that was read is handled and the stream ended there: the loop goes
            # on to wait for data in this step, not in a step of its own (read_to_end).

    def finish(self) -> None:
        """Commit the handled position, unless the queue was fenced, lost or abandoned
        (nothing more may be written then)."""
        try:
            if self.release_lock:
                self._write_commit()
        except REDIS_DOWN as exc:
            self.redis_failed(exc)
        finally:
            if self._rounds is not None:
                with self._commit_lock, self._mutex:
                    self._closed = True
                self._rounds.remove(self)

    def commit_point(self) -> int:
        # A foreign entry holds no place in the order (its offset may be one done already).
        placed = (
            i.offset for i in self.buffer if not (isinstance(i, MalformedEntry) and i.foreign)
        )
        return next(placed, self.next_fetch)

    def snapshot(self) -> QueueSnapshot:
        head = self.buffer[0] if self.buffer else None
        retries = head.reconsume_times if isinstance(head, Message) else 0
        return self.base_snapshot(retries, head.offset if head is not None else self.next_fetch)

    # -- the loop --------------------------------------------------------------------
    def _fill(self, handed: Handed) -> bool:
        """Read into the empty buffer (``handed`` if the runner read for it); whether
        anything is there to consume. Once all that the last read found was consumed,
        and it found the stream's end, there is nothing to read until the runner says
        so (``read_to_end``)."""
        if handed is None and self.read_to_end():
            return False
        self.buffer.extend(self.read(PREFETCH, handed))
        return bool(self.buffer)

    def _take_batch(self) -> list[Message]:
        batch: list[Message] = []
        for item in self.buffer:
            if isinstance(item, MalformedEntry) or len(batch) >= self.env.sub.batch_size:
                break
            batch.append(item)
        return batch

    def _consume_head(self) -> None:
        head = self.buffer[0]
        with self.consume_lock:
            if self.stopping.is_set() or not self.lock_valid():
                return
            if isinstance(head, MalformedEntry):
                self._dead_letter_malformed(head)
                return
            batch = self._take_batch()
            attempt = self.invoke(batch)
            if attempt.succeeded:
                self._on_success(batch)
            else:
                self.failures.record((m.offset for m in batch), attempt)
                self._on_suspend(batch, attempt.error, attempt.suspend_s)

    def _on_success(self, batch: list[Message]) -> None:
        self.last_error = ""
        for m in batch:
            self.buffer.popleft()
            self.failures.take(m.offset)
            self.report_handled(m)
        with self._mutex:
            self._unwritten = batch[-1].offset + 1
        if self._commits_now():
            self._write_commit()

    def _commits_now(self) -> bool:
        """Whether a batch's success commits at once: every batch (no interval), the
        queue's first (its progress shows from the start), a batch that outlived the
        client-side lock (its write is refused if another consumer holds the queue now,
        and that is reported), and a due one when no commit rounds write it."""
        if self._interval_s <= 0 or not self._commit_due or not self.lock_valid():
            return True
        return self._rounds is None and time.monotonic() >= self._commit_due

    def _on_suspend(self, batch: list[Message], error: str, suspend_s: float) -> None:
        limit = self.env.sub.max_reconsume_times
        doomed = [m for m in batch if limit != UNBOUNDED and m.reconsume_times >= limit]
        retry = [m for m in batch if m not in doomed]
        for m in retry:
            m.reconsume_times += 1
        for m in doomed:
            if not self._dead_letter(m, error):
                return
        if not retry or not self._write_commit():  # a suspended queue's position is stored
            return
        self.paused_until = time.monotonic() + suspend_s
        self.last_error = error
        head = retry[0]
        self.emit(
            ev.CONSUME_FAILED,
            key=head.key,
            details={
                "offsets": [m.offset for m in retry],
                "reconsume_times": head.reconsume_times,
                "max_reconsume_times": limit,
                "suspend_ms": int(suspend_s * 1000),
                "error": error,
            },
        )

    def _dead_letter(self, message: Message, error: str) -> bool:
        self.buffer.remove(message)
        entry = dead_letter_entry(message, self.env.sub, error, self.failures.take(message.offset))
        result = self._move_to_dead_letters(entry)
        if not self.accepted(result, self.commit_point()):
            return False
        self.report_dead_letter(message, error, result.dlq_id, self.commit_point())
        return True

    def _dead_letter_malformed(self, bad: MalformedEntry) -> None:
        self.buffer.popleft()
        result = self._move_to_dead_letters(
            malformed_dead_letter(self.ref, self.env.sub.group, bad)
        )
        if self.accepted(result, self.commit_point()):
            self.report_malformed(bad, result.dlq_id)

    def _move_to_dead_letters(self, entry: dict[str, Any]) -> CommitResult:
        """Dead-letter the entry and commit past it, in one fenced step (unfenced when
        broadcasting); the handled position needs no commit of its own then."""
        env = self.env
        with self._commit_lock:
            result = env.broker.dead_letter(
                self.ref,
                env.sub.group,
                env.consumer_id,
                self.token,
                self.commit_point(),
                entry,
                offset_group=env.offset_group,
            )
            if result.ok:
                with self._mutex:
                    self._unwritten = None  # the move committed past it
        return result

    def _idle_commit(self) -> float | None:
        """An idle queue's commit when it writes its own (broadcasting, or an interval of
        0): written once ``commit_interval_ms`` has passed since the last commit (at once
        with 0), not at every wait, so queues woken by a few messages each do not each pay
        a commit per wake-up (docs/reading.md). The longest the queue may wait for data
        before that commit is due; None when nothing is left to write, or when the
        subscription's commit rounds write it."""
        if self._unwritten is None or self._rounds is not None:
            return None
        left = self._commit_due - time.monotonic()
        if self._interval_s > 0 and left > 0:
            return left
        self._write_commit()
        return None

    def _write_commit(self) -> bool:
        """Commit the handled position if it moved since the last commit, now; False when
        the commit was refused (the queue is then dropped)."""
        with self._commit_lock:
            with self._mutex:
                offset, self._unwritten = self._unwritten, None
            self._commit_due = time.monotonic() + self._interval_s
            return offset is None or self._commit(offset)

    # -- the commit rounds (``commits.Committing``) ------------------------------------
    def commit_snapshot(self) -> Commit | None:
        """The handled position to commit in this round, under the commit lock (held
        until ``commit_done``); None when it did not move, the lock is busy (the queue
        writes itself), or the queue may not write (fenced, lost, finished)."""
        return held_snapshot(self._commit_lock, self._take_unwritten)

    def _take_unwritten(self) -> Commit | None:
        with self._mutex:
            offset, token = self._unwritten, self.token
            if self._closed or not self.release_lock or offset is None or token is None:
                return None
            self._unwritten = None
        env = self.env
        return Commit(self.ref, env.sub.group, env.consumer_id, token, offset)

    def commit_done(self, commit: Commit, result: CommitResult | Exception) -> None:
        """The round's answer for this queue: accepted or refused (``accepted``), or an
        error (written again by the next round or the final commit); releases the
        commit lock."""
        try:
            if not isinstance(result, Exception):
                self.accepted(result, commit.offset)
                return
            with self._mutex:
                if self._unwritten is None:
                    self._unwritten = commit.offset
            self.commit_failed(result)
        finally:
            self._commit_lock.release()

    def _commit(self, offset: int) -> bool:
        env = self.env
        if self.token is None:
            env.broker.commit_unfenced(self.ref, env.offset_group, offset)
            env.events.committed(self.ref, env.sub.group, None, env.consumer_id, offset)
            return True
        result = env.broker.commit(self.ref, env.sub.group, env.consumer_id, self.token, offset)
        return self.accepted(result, offset)
