"""One queue under key ordering: the pull side of DESIGN.md section 2.

Contract (beyond ``QueueWorker``'s lock and fencing contract):
- The worker's own thread pulls the queue in offset order and hands each message to its
  key's lane; lanes run the handler. Per key, messages run one at a time in offset order.
- A failing message blocks only its own key, which retries with per-key back-off
  (``retry_initial_ms`` * ``retry_factor`` ** n, capped at ``retry_max_ms``).
- At ``max_reconsume_times`` the message is dead-lettered; under ``after_dlq = hold`` its
  key is held in the same atomic step, and every later message of that key is parked
  durably (in Redis, in offset order) until the dead letter is replayed or discarded;
  then the parked messages run in order before the key moves on.
- The committed offset is the low-water mark; offsets completed above it are committed
  with it every ``flush_interval_ms`` (fenced), and skipped by the next owner.
- Pulling pauses when ``max_in_flight`` messages are unfinished and resumes at half.
- On drop, no new message of the queue starts; the worker waits for the ones running,
  flushes, and only then unlocks.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import traceback
from collections import defaultdict
from typing import Any

from workers import events as ev
from workers.broker import CommitOutcome, CommitResult, dead_letter_entry
from workers.config import UNBOUNDED, AfterDlq
from workers.lanes import LanePool, Task, Verdict
from workers.message import (
    ConsumeContext,
    ConsumeStatus,
    MalformedEntry,
    Message,
    decode_entry,
    deserialize,
    serialize,
)
from workers.offset_tracker import OffsetTracker
from workers.queue_worker import QueueWorker, WorkerEnv, _describe, _status_of

log = logging.getLogger(__name__)

FETCH_COUNT = 256
PARKED_POLL_S = 0.5  # how soon an operator's replay/discard is picked up
# A key whose message finds the client-side lock stale waits this long and tries again: the
# lock is either renewed soon (the key goes on) or lost (the worker is dropped and purged).
STALE_LOCK_RETRY_S = 0.05
STATE_EVENT_S = 1.0  # how often the queue's key-level state is reported
_serials = itertools.count(1)


class KeyQueueWorker(QueueWorker):
    def __init__(self, env: WorkerEnv, queue: int, token: int | None) -> None:
        super().__init__(env, queue, token)
        if env.lanes is None:
            raise ValueError("key ordering needs the subscription's lane pool")
        self.lanes: LanePool = env.lanes
        self.serial = next(_serials)
        self.tracker = OffsetTracker(0)
        self._mutex = threading.Lock()  # tracker, parked, blocked, running, holds
        self._idle = threading.Condition(self._mutex)
        # Taken around every offset write (snapshot + Redis call, flush, park, dead letter)
        # so an older snapshot never lands after a newer one and moves the commit back.
        # Always taken before ``_mutex``, never while holding it.
        self._commit_lock = threading.Lock()
        # Holds being written by lanes (dead letter, then parking of the key's rest), and
        # a count of finished ones: ``_poll_parked`` trusts a Redis snapshot only when no
        # hold was in progress or finished while it was read.
        self._holds_in_progress = 0
        self._holds_finished = 0
        self._running = 0
        self.parked: dict[str, str] = {}  # key -> "held" | "releasing"
        self.blocked: dict[str, dict[str, Any]] = {}
        self.flow_paused = False
        self._dirty = False
        self._last_state: dict[str, Any] = {}

    # -- pull side (the worker's own thread) --------------------------------------------
    def _run(self) -> None:
        try:
            self._restore()
            self._pull_loop()
        except Exception:
            log.exception("queue %s/%s pull loop crashed", self.env.sub.topic, self.queue)
            self._emit(ev.HANDLER_ERROR, details={"error": traceback.format_exc()[-2000:]})
            self.drop("crashed")
        finally:
            self._drain_and_flush()
            self._finish()

    def _restore(self) -> None:
        env = self.env
        stored = env.broker.read_offset(env.sub.topic, env.sub.group, self.queue)
        self.tracker = OffsetTracker(stored.committed, stored.completed)
        self.next_fetch = stored.committed
        states = env.broker.parked_keys(env.sub.topic, env.sub.group, self.queue)
        self.parked = {k: str(v.get("state", "held")) for k, v in states.items()}
        for key, state in self.parked.items():
            if state == "releasing":
                self._submit_parked(key)

    def _pull_loop(self) -> None:
        sub = self.env.sub
        next_flush = next_parked_poll = next_state = 0.0
        while not self._dropped.is_set():
            now = time.monotonic()
            if not self.lock_valid():
                self.state = "lock_expired"
                self._dropped.wait(0.05)
                continue
            if now >= next_flush:
                self._flush()
                next_flush = now + sub.flush_interval_ms / 1000.0
            if now >= next_parked_poll:
                self._poll_parked()
                next_parked_poll = now + PARKED_POLL_S
            if now >= next_state:
                self._report_state()
                next_state = now + STATE_EVENT_S
            if self._flow_controlled():
                self._dropped.wait(0.01)
                continue
            self.state = "consuming"
            self._pull(min(FETCH_COUNT, sub.max_in_flight - self.tracker.in_flight))

    def _flow_controlled(self) -> bool:
        in_flight = self.tracker.in_flight
        limit = self.env.sub.max_in_flight
        if not self.flow_paused and in_flight >= limit:
            self.flow_paused = True
            self.state = "paused"
            self._emit(ev.FLOW_PAUSED, details={"in_flight": in_flight, "max_in_flight": limit})
        elif self.flow_paused and in_flight <= limit // 2:
            self.flow_paused = False
            self._emit(ev.FLOW_RESUMED, details={"in_flight": in_flight, "max_in_flight": limit})
        return self.flow_paused

    def _pull(self, room: int) -> None:
        env = self.env
        entries = env.broker.read_from(
            env.sub.topic, self.queue, self.next_fetch, max(1, room), block_s=env.timings.poll_block
        )
        to_park: dict[str, list[Task]] = defaultdict(list)
        for entry_id, fields in entries:
            try:
                item: Message | MalformedEntry = decode_entry(
                    env.sub.topic, self.queue, entry_id, fields
                )
            except MalformedEntry as bad:
                item = bad
            except ValueError:
                continue
            if item.offset < self.next_fetch:
                continue
            self.next_fetch = item.offset + 1
            with self._mutex:
                self.tracker.dispatched(item.offset)
                if self.tracker.already_done(item.offset):
                    self.tracker.done(item.offset)
                    continue
                held = isinstance(item, Message) and self.parked.get(item.key) == "held"
                if isinstance(item, Message) and not held:
                    # Submitted under the mutex that a lane holds while it marks the key
                    # held: the message is then either in the lane when the key's rest is
                    # parked, or seen here as held. Checked and submitted apart, it could
                    # slip into the lane after the rest was parked and run ahead of it.
                    self.lanes.submit(Task(item, self))
                    continue
            if isinstance(item, MalformedEntry):
                self._dead_letter_malformed_key_mode(item)
            else:
                to_park[item.key].append(Task(item, self))
        for key, tasks in to_park.items():
            self._park(key, tasks)

    # -- lane side (called from lane threads) ---------------------------------------------
    def process(self, task: Task) -> tuple[Verdict, float]:
        with self._mutex:
            if self._dropped.is_set():
                return Verdict.DISCARD, 0.0
            if not self.lock_valid():
                # Not DISCARD: the worker lives on if the lock is renewed, and the key's
                # messages dropped from the lane would never be done (the mark stuck for
                # good) while its later ones ran ahead of them.
                return Verdict.RETRY, STALE_LOCK_RETRY_S
            self._running += 1
        try:
            status, error, suspend = self._invoke_one(task.message)
        finally:
            with self._mutex:
                self._running -= 1
                self._idle.notify_all()
        if status is ConsumeStatus.SUCCESS:
            return self._succeeded(task)
        return self._failed(task, error, suspend)

    def _invoke_one(self, message: Message) -> tuple[ConsumeStatus, str, float]:
        env = self.env
        ctx = ConsumeContext(
            env.sub.topic,
            env.sub.group,
            self.queue,
            env.consumer_id,
            self.token or 0,
            env.sub.suspend_ms,
        )
        started = time.monotonic()
        try:
            status, error = _status_of(env.handler([message], ctx))
        except Exception as exc:
            status, error = ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT, _describe(exc)
        if not self.lock_valid():
            self._emit(
                ev.LOCK_MARGIN_OVERRUN,
                key=message.key,
                details={
                    "offsets": [message.offset, message.offset],
                    "handler_seconds": round(time.monotonic() - started, 3),
                    "client_lock_expiry": env.timings.client_lock_expiry,
                },
            )
        suspend = ctx.suspend_seconds if ctx.suspend_ms != env.sub.suspend_ms else 0.0
        return status, error, suspend

    def _succeeded(self, task: Task) -> tuple[Verdict, float]:
        m = task.message
        with self._mutex:
            self.blocked.pop(m.key, None)
        if task.parked_member and not self._unpark(m.key, task.parked_member):
            return Verdict.DISCARD, 0.0
        self._done(m.offset)
        return Verdict.DONE, 0.0

    def _failed(self, task: Task, error: str, suspend: float) -> tuple[Verdict, float]:
        m, sub = task.message, self.env.sub
        if sub.max_reconsume_times != UNBOUNDED and m.reconsume_times >= sub.max_reconsume_times:
            return self._dead_letter_key_mode(task, error)
        m.reconsume_times += 1
        delay = suspend or sub.retry_delay(m.reconsume_times)
        with self._mutex:
            behind = self._waiting_behind(m.key)
            self.blocked[m.key] = {
                "key": m.key,
                "offset": m.offset,
                "retries": m.reconsume_times,
                "waiting": behind,
                "error": error,
                "since": self.blocked.get(m.key, {}).get("since", time.time()),
            }
        self._emit(
            ev.CONSUME_FAILED,
            key=m.key,
            details={
                "offsets": [m.offset],
                "reconsume_times": m.reconsume_times,
                "max_reconsume_times": sub.max_reconsume_times,
                "retry_in_ms": int(delay * 1000),
                "error": error,
                "waiting_behind": behind,
            },
        )
        return Verdict.RETRY, delay

    def _waiting_behind(self, key: str) -> int:
        lane = self.lanes.lane_of(key)
        return lane.waiting_for((self.serial, key)) - 1

    def _dead_letter_key_mode(self, task: Task, error: str) -> tuple[Verdict, float]:
        hold = self.env.sub.after_dlq is AfterDlq.HOLD
        if hold:
            with self._mutex:
                self._holds_in_progress += 1
        verdict = (Verdict.DISCARD, 0.0)
        try:
            verdict = self._dead_letter_and_hold(task, error, hold)
            return verdict
        finally:
            if hold and verdict[0] is not Verdict.PARK:
                self._hold_finished()  # on PARK, once the lane handed back the key's rest

    def _dead_letter_and_hold(self, task: Task, error: str, hold: bool) -> tuple[Verdict, float]:
        m, env = task.message, self.env
        with self._commit_lock:
            with self._mutex:
                self.blocked.pop(m.key, None)
                if hold:
                    self.parked[m.key] = "held"
                self.tracker.done(m.offset)
                low, completed = self.tracker.low_water, self.tracker.completed_above()
            result = env.broker.dead_letter(
                env.sub.topic,
                env.sub.group,
                self.queue,
                env.consumer_id,
                self.token,
                low,
                dead_letter_entry(m, env.sub.group, error),
                completed=completed,
                park_key=m.key if hold else "",
            )
        if not self._accepted(result, low):
            return Verdict.DISCARD, 0.0
        if task.parked_member and not self._unpark(m.key, task.parked_member):
            return Verdict.DISCARD, 0.0
        self._emit(
            ev.DEAD_LETTERED,
            key=m.key,
            details={
                "offset": m.offset,
                "reconsume_times": m.reconsume_times,
                "error": error,
                "dlq_id": result.dlq_id,
                "committed": low,
                "after_dlq": env.sub.after_dlq.value,
            },
        )
        if hold:
            self._emit(
                ev.KEY_PARKED, key=m.key, details={"offset": m.offset, "dlq_id": result.dlq_id}
            )
            return Verdict.PARK, 0.0
        return Verdict.DONE, 0.0

    def park_tasks(self, key: str, tasks: list[Task]) -> None:
        """A lane's hand-back of a key it saw held (the key's rest, maybe nothing): park
        them; the hold is then fully written."""
        try:
            self._park(key, tasks)
        finally:
            self._hold_finished()

    def _hold_finished(self) -> None:
        with self._mutex:
            self._holds_in_progress -= 1
            self._holds_finished += 1

    def _park(self, key: str, tasks: list[Task]) -> None:
        """Park the key's messages durably and count them done for the queue. Fenced in
        Redis, so a client-side lock gone stale meanwhile does not stop it: dropping the
        messages instead would leave their offsets never done."""
        if not tasks or self._dropped.is_set():
            return
        env = self.env
        members = [(t.message.offset, t.parked_member or serialize(t.message)) for t in tasks]
        with self._commit_lock:
            with self._mutex:
                for t in tasks:
                    self.tracker.done(t.message.offset)
                low, completed = self.tracker.low_water, self.tracker.completed_above()
            result = env.broker.park(
                env.sub.topic,
                env.sub.group,
                self.queue,
                env.consumer_id,
                self.token or 0,
                key,
                members,
                low,
                completed,
            )
        if self._accepted(result, low):
            self._emit(
                ev.MESSAGES_PARKED,
                key=key,
                details={"offsets": [o for o, _ in members], "committed": low},
            )

    def _unpark(self, key: str, member: str) -> bool:
        env = self.env
        outcome, freed = env.broker.unpark(
            env.sub.topic, env.sub.group, self.queue, env.consumer_id, self.token or 0, key, member
        )
        if outcome is not CommitOutcome.OK:
            self._accepted(CommitResult(outcome, 0), self.tracker.low_water)
            return False
        if freed:
            with self._mutex:
                self.parked.pop(key, None)
            self._emit(ev.KEY_RELEASED, key=key)
        return True

    # -- parked keys -------------------------------------------------------------------
    def _poll_parked(self) -> None:
        env = self.env
        with self._mutex:
            finished_before = self._holds_finished
        states = env.broker.parked_keys(env.sub.topic, env.sub.group, self.queue)
        released: list[str] = []
        with self._mutex:  # one section: a hold starting meanwhile comes after it whole
            # A hold written (or still being written) while the snapshot was read may be
            # missing from it: acting on it would forget the key is held, or re-run its
            # parked messages. The next poll sees it whole.
            if self._holds_in_progress or self._holds_finished != finished_before:
                return
            for key, raw in states.items():
                state = str(raw.get("state", "held"))
                previous = self.parked.get(key)
                self.parked[key] = state
                if state == "releasing" and previous != "releasing":
                    released.append(key)
            for key in [k for k in self.parked if k not in states]:
                del self.parked[key]  # freed in Redis (by us, or by hand)
        for key in released:
            self._submit_parked(key)

    def _submit_parked(self, key: str) -> None:
        env = self.env
        members = env.broker.parked_messages(env.sub.topic, env.sub.group, self.queue, key)
        if not members:
            # A discarded dead letter with nothing parked behind it. unpark.lua frees the
            # key only if its parked set is still empty, in one step: a park landing just
            # before is then run below, not stranded behind a freed key.
            if not self._unpark(key, ""):
                return
            members = env.broker.parked_messages(env.sub.topic, env.sub.group, self.queue, key)
            if not members:  # freed (now, or before by the unpark of its last message)
                with self._mutex:
                    if self.parked.get(key) == "releasing":  # not held again meanwhile
                        del self.parked[key]
                return
        for member in members:
            message = deserialize(env.sub.topic, self.queue, member)
            self.lanes.submit(Task(message, self, parked_member=member))

    # -- offsets -----------------------------------------------------------------------
    def _done(self, offset: int) -> None:
        with self._mutex:
            self.tracker.done(offset)
            self._dirty = True

    def _commit_point(self) -> int:
        # What lock_released reports: the low-water mark. (The base class's buffer is not
        # used under key ordering; its answer would be the next offset to pull.)
        return self.tracker.low_water

    def _flush(self) -> bool:
        with self._commit_lock:
            with self._mutex:
                low, completed = self.tracker.low_water, self.tracker.completed_above()
                dirty, self._dirty = self._dirty, False
            if not dirty or self.token is None:
                return True
            env = self.env
            result = env.broker.commit(
                env.sub.topic,
                env.sub.group,
                self.queue,
                env.consumer_id,
                self.token,
                low,
                completed,
            )
        return self._accepted(result, low, completed=completed)

    def _accepted(self, result: CommitResult, offset: int, completed: str = "") -> bool:
        env = self.env
        if result.ok:
            env.events.committed(
                env.sub.topic,
                env.sub.group,
                self.queue,
                self.token,
                env.consumer_id,
                offset,
                highest_completed=self.tracker.highest_completed,
            )
            return True
        self._emit(
            ev.FENCING_REJECTED,
            details={
                "offset": offset,
                "completed": completed,
                "current_token": result.current_token,
                "outcome": result.outcome.name.lower(),
            },
        )
        self.drop("fenced", release_lock=False)
        return False

    def _drain_and_flush(self) -> None:
        """No new message starts (``active`` is false); wait for the running ones, then
        commit what completed. Bounded by the client-side lock expiry."""
        self.lanes.purge(self.serial)
        deadline = time.monotonic() + self.env.timings.client_lock_expiry
        with self._mutex:
            while self._running and time.monotonic() < deadline:
                self._idle.wait(0.1)
            self._dirty = True
        try:
            if self._release_lock:
                self._flush()
        except Exception:
            log.warning(
                "final flush of %s/%s failed", self.env.sub.topic, self.queue, exc_info=True
            )

    def _dead_letter_malformed_key_mode(self, bad: MalformedEntry) -> None:
        entry = {
            "topic": self.env.sub.topic,
            "queue": self.queue,
            "offset": bad.offset,
            "key": bad.raw.get(b"k", b"").decode("utf-8", "replace"),
            "body": bad.raw.get(b"b", b""),
            "headers": "{}",
            "produced_at_ms": 0,
            "reconsume_times": 0,
            "group": self.env.sub.group,
            "error": f"malformed entry: {bad.reason}",
        }
        with self._commit_lock:
            with self._mutex:
                self.tracker.done(bad.offset)
                low, completed = self.tracker.low_water, self.tracker.completed_above()
            result = self.env.broker.dead_letter(
                self.env.sub.topic,
                self.env.sub.group,
                self.queue,
                self.env.consumer_id,
                self.token,
                low,
                entry,
                completed=completed,
            )
        if self._accepted(result, low):
            self._emit(
                ev.MALFORMED_ENTRY,
                details={"offset": bad.offset, "reason": bad.reason, "dlq_id": result.dlq_id},
            )

    # -- reporting ---------------------------------------------------------------------
    def key_state(self) -> dict[str, Any]:
        with self._mutex:
            blocked = sorted(self.blocked.values(), key=lambda b: b["since"])[:20]
            return {
                "low_water": self.tracker.low_water,
                "highest_completed": self.tracker.highest_completed,
                "in_flight": self.tracker.in_flight,
                "flow_paused": self.flow_paused,
                "blocked_keys": blocked,
                "blocked_count": len(self.blocked),
                "parked_keys": sorted(self.parked.items())[:50],
                "parked_count": len(self.parked),
            }

    def _report_state(self) -> None:
        state = self.key_state()
        if state != self._last_state:
            self._last_state = state
            self._emit(ev.KEY_STATE, details=state)
