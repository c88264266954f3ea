"""Key ordering: a queue's messages run on the subscription's lanes, ordered per key.

Beyond the base contract (``workers.ordering.base``):
- The worker's steps pull the queue in offset order and hand each message to its key's
  lane; lanes run the handler. Per key, messages run one at a time in offset order.
- A failing message blocks only its own key, which retries with per-key back-off
  (``retry_initial_ms`` * ``retry_factor`` ** n, capped at ``retry_max_ms``).
- At ``max_reconsume_times`` the message is dead-lettered; under ``after_dlq = hold`` its
  key is held in the same atomic step, and every later message of that key is parked
  durably (in Redis, in offset order) until the dead letter is replayed or discarded;
  then the parked messages run in order before the key moves on.
- The committed offset is the low-water mark; offsets completed above it are committed
  with it every ``flush_interval_ms`` (fenced), and skipped by the next owner. Those
  periodic commits are written by the subscription's ``Commits``, every queue's in
  one round trip; the queue writes its final one itself.
- Pulling pauses when ``max_in_flight`` messages are unfinished and resumes at half.
- On drop, no new message of the queue starts; the worker waits for the ones running,
  flushes, and only then unlocks.
See docs/lanes.md and docs/semantics.md.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Generator

from lockstep.workers import events as ev
from lockstep.workers.broker import Commit, CommitOutcome, CommitResult, dead_letter_entry
from lockstep.workers.cards import BlockedKey, KeyState, QueueSnapshot
from lockstep.workers.config import UNBOUNDED, AfterDlq
from lockstep.workers.lanes import LanePool, Task, Verdict
from lockstep.workers.message import MalformedEntry, Message, deserialize, serialize
from lockstep.workers.offset_tracker import OffsetTracker
from lockstep.workers.ordering.base import FailureLog, QueueWorker, WorkerEnv, malformed_dead_letter
from lockstep.workers.ordering.commits import Commits, held_snapshot
from lockstep.workers.ordering.runner import READY, Handed, Wait
from lockstep.workers.outage import REDIS_DOWN
from lockstep.workers.refs import QueueRef

log = logging.getLogger(__name__)

# Entries read per round trip: large reads keep the lanes fed; each read is also capped by
# the room left under max_in_flight.
FETCH_COUNT = 256
# How soon an operator's replay or discard is picked up; one HGETALL per queue per poll.
PARKED_POLL_S = 0.5
# A key whose message finds the client-side lock stale waits this long and tries again: the
# lock is either renewed soon (the key goes on) or lost (the worker is dropped and purged).
STALE_LOCK_RETRY_S = 0.05
# How often a changed key-level state is reported: live enough for the pages, few events.
STATE_EVENT_S = 1.0
# While pulling is paused (max_in_flight), how often the room is looked at again.
FLOW_CHECK_S = 0.01
_serials = itertools.count(1)


class KeyOrderingWorker(QueueWorker):
    """Also the lanes' ``LaneClient``: ``process`` and ``park_tasks`` run on lane threads."""

    # A step after a wait for data decodes the entries and gives them to the lanes. It
    # calls Redis only for held keys (to park their messages, and to poll them twice a
    # second), a malformed entry (to dead-letter it) or a gap in the offsets; the rest of
    # a long stream is read by the next step, on a pool thread (after a READY).
    inline_data_steps = True

    def __init__(self, env: WorkerEnv, ref: QueueRef, token: int | None) -> None:
        super().__init__(env, ref, token)
        if env.lanes is None or env.commits is None:
            raise ValueError("key ordering needs the subscription's lane pool and commits")
        self.lanes: LanePool = env.lanes
        self.commits: Commits = env.commits
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
        self.blocked: dict[str, BlockedKey] = {}
        self.flow_paused = False
        self._dirty = False
        self._closed = False  # the final commit was written: ``commits`` writes no more
        self._last_state: KeyState | None = None
        self.failures = FailureLog()

    # -- the contract (the worker's own thread) -----------------------------------------
    def restore(self) -> None:
        env = self.env
        stored = env.broker.read_offset(self.ref, env.sub.group)
        self.tracker = OffsetTracker(stored.committed, stored.completed)
        self.next_fetch = stored.committed
        states = env.broker.parked_keys(self.ref, env.sub.group)
        self.parked = {k: str(v.get("state", "held")) for k, v in states.items()}
        for key, state in self.parked.items():
            if state == "releasing":
                self._submit_parked(key)
        self.commits.add(self)

    def commit_point(self) -> int:
        return self.tracker.low_water

    def snapshot(self) -> QueueSnapshot:
        out = self.base_snapshot(0, self.next_fetch)
        keys = self.key_state()
        out.update(keys)
        if keys["flow_paused"]:
            out["state"] = "paused"
        elif keys["blocked_count"]:
            out["state"] = "blocked"
        return out

    def consume(self) -> Generator[Wait, Handed, None]:
        sub = self.env.sub
        next_parked_poll = next_state = 0.0
        handed: Handed = None
        while not self.stopping.is_set():
            now = time.monotonic()
            renewal = self.renewal_wait()
            if renewal is not None:
                handed = yield renewal
                continue
            if now >= next_parked_poll:
                if self._has_holds():  # nothing held: no replay or discard to pick up
                    self._poll_parked()
                next_parked_poll = now + PARKED_POLL_S
            if now >= next_state:
                self._report_state()
                next_state = now + STATE_EVENT_S
            if self._flow_controlled():
                handed = yield Wait(FLOW_CHECK_S)
                continue
            self.state = "consuming"
            room = min(FETCH_COUNT, sub.max_in_flight - self.tracker.in_flight)
            # After a read that found the stream's end, only the runner's wait for data
            # learns of more (read_to_end).
            pulled = (handed is not None or not self.read_to_end()) and self._pull(room, handed)
            handed = None
            if pulled and not self.read_to_end():
                handed = yield READY  # the other queues of the runner get their turn
                continue
            due = min(next_parked_poll, next_state) - time.monotonic()
            handed = yield self.data_wait(max(0.0, due) if self._duties_pending() else None)

    def _has_holds(self) -> bool:
        with self._mutex:
            return bool(self.parked) or self._holds_in_progress > 0

    def _duties_pending(self) -> bool:
        """Whether an idle queue still has periodic work ahead: messages in its lanes,
        held keys to poll, or a key state not reported yet (its commits are ``commits``'
        work). Without any, it waits for data alone (an idle queue costs nothing)."""
        with self._mutex:
            busy = self.tracker.in_flight > 0 or bool(self.parked)
            busy = busy or self._holds_in_progress > 0
        return busy or self.key_state() != self._last_state

    def _flow_controlled(self) -> bool:
        in_flight = self.tracker.in_flight
        limit = self.env.sub.max_in_flight
        if not self.flow_paused and in_flight >= limit:
            self.flow_paused = True
            self.state = "paused"
            self.emit(ev.FLOW_PAUSED, details={"in_flight": in_flight, "max_in_flight": limit})
        elif self.flow_paused and in_flight <= limit // 2:
            self.flow_paused = False
            self.emit(ev.FLOW_RESUMED, details={"in_flight": in_flight, "max_in_flight": limit})
        return self.flow_paused

    def _pull(self, room: int, handed: Handed) -> bool:
        """Read up to ``room`` entries and hand them out; whether any were read."""
        items = self.read(max(1, room), handed)
        to_park: dict[str, list[Task]] = defaultdict(list)
        for item in items:
            if isinstance(item, MalformedEntry) and item.foreign:
                self._dead_letter_malformed_key_mode(item)  # not an offset of the queue
                continue
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
        return bool(items)

    # -- lane side (called from lane threads) ---------------------------------------------
    def process(self, task: Task) -> tuple[Verdict, float]:
        with self._mutex:
            if self.stopping.is_set():
                return Verdict.DISCARD, 0.0
            if not self.lock_valid():
                # Not DISCARD: the worker lives on if the lock is renewed, and the key's
                # messages dropped from the lane would never be done (the mark stuck for
                # good) while its later ones ran ahead of them.
                return Verdict.RETRY, STALE_LOCK_RETRY_S
            self._running += 1
        try:
            attempt = self.invoke([task.message], key=task.message.key)
        finally:
            with self._mutex:
                self._running -= 1
                self._idle.notify_all()
        try:
            if attempt.succeeded:
                return self._succeeded(task)
            self.failures.record((task.message.offset,), attempt)
            # A suspend time the handler chose replaces the key's back-off for this retry.
            return self._failed(
                task, attempt.error, attempt.suspend_s if attempt.suspend_chosen else 0.0
            )
        except REDIS_DOWN as exc:
            self.redis_failed(exc)  # the queue starts again from the store
            return Verdict.DISCARD, 0.0

    def _succeeded(self, task: Task) -> tuple[Verdict, float]:
        m = task.message
        self.failures.take(m.offset)
        self.report_handled(m)
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
            previous = self.blocked.get(m.key)
            self.blocked[m.key] = {
                "key": m.key,
                "offset": m.offset,
                "retries": m.reconsume_times,
                "waiting": behind,
                "error": error,
                "since_ms": previous["since_ms"] if previous else int(time.time() * 1000),
            }
        self.emit(
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
        return self.lanes.waiting_for((self.serial, key)) - 1

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
                self.ref,
                env.sub.group,
                env.consumer_id,
                self.token,
                low,
                dead_letter_entry(m, env.sub, error, self.failures.take(m.offset)),
                completed=completed,
                park_key=m.key if hold else "",
            )
        if not self.accepted(result, low):
            return Verdict.DISCARD, 0.0
        if task.parked_member and not self._unpark(m.key, task.parked_member):
            return Verdict.DISCARD, 0.0
        self.report_dead_letter(m, error, result.dlq_id, low, after_dlq=str(env.sub.after_dlq))
        if hold:
            self.emit(
                ev.KEY_PARKED, key=m.key, details={"offset": m.offset, "dlq_id": result.dlq_id}
            )
            return Verdict.PARK, 0.0
        return Verdict.DONE, 0.0

    def park_tasks(self, key: str, tasks: list[Task]) -> None:
        """A lane's hand-back of a key it saw held (the key's rest, maybe nothing): park
        them; the hold is then fully written."""
        try:
            self._park(key, tasks)
        except REDIS_DOWN as exc:
            self.redis_failed(exc)  # not parked: the queue starts again from the store
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
        if not tasks or self.stopping.is_set():
            return
        env = self.env
        members = [(t.message.offset, t.parked_member or serialize(t.message)) for t in tasks]
        with self._commit_lock:
            with self._mutex:
                for t in tasks:
                    self.tracker.done(t.message.offset)
                low, completed = self.tracker.low_water, self.tracker.completed_above()
            result = env.broker.park(
                self.ref,
                env.sub.group,
                env.consumer_id,
                self.token or 0,
                key,
                members,
                low,
                completed,
            )
        if self.accepted(result, low):
            self.emit(
                ev.MESSAGES_PARKED,
                key=key,
                details={"offsets": [o for o, _ in members], "committed": low},
            )

    def _unpark(self, key: str, member: str) -> bool:
        env = self.env
        outcome, freed = env.broker.unpark(
            self.ref, env.sub.group, env.consumer_id, self.token or 0, key, member
        )
        if outcome is not CommitOutcome.OK:
            self.accepted(CommitResult(outcome, 0), self.tracker.low_water)
            return False
        if freed:
            with self._mutex:
                self.parked.pop(key, None)
            self.emit(ev.KEY_RELEASED, key=key)
        return True

    # -- parked keys -------------------------------------------------------------------
    def _poll_parked(self) -> None:
        env = self.env
        with self._mutex:
            finished_before = self._holds_finished
        states = env.broker.parked_keys(self.ref, env.sub.group)
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
        members = env.broker.parked_messages(self.ref, env.sub.group, key)
        if not members:
            # A discarded dead letter with nothing parked behind it. unpark.lua frees the
            # key only if its parked set is still empty, in one step: a park landing just
            # before is then run below, not stranded behind a freed key.
            if not self._unpark(key, ""):
                return
            members = env.broker.parked_messages(self.ref, env.sub.group, key)
            if not members:  # freed (now, or before by the unpark of its last message)
                with self._mutex:
                    if self.parked.get(key) == "releasing":  # not held again meanwhile
                        del self.parked[key]
                return
        for member in members:
            message = deserialize(self.ref, member)
            self.lanes.submit(Task(message, self, parked_member=member))

    # -- offsets -----------------------------------------------------------------------
    def _done(self, offset: int) -> None:
        with self._mutex:
            self.tracker.done(offset)
            self._dirty = True

    def commit_snapshot(self) -> Commit | None:
        """``Committing``: the commit to send now, under the commit lock (held until
        ``commit_done``); None when nothing changed, the lock is busy, the final commit
        was written, or the queue may not write (no token, fenced, lost)."""
        # A busy lock: a lane is writing for this queue, and the next round takes it.
        return held_snapshot(self._commit_lock, self._take_completed)

    def _take_completed(self) -> Commit | None:
        token, env = self.token, self.env
        with self._mutex:
            due = self._dirty and not self._closed and self.release_lock
            if not due or token is None:
                return None
            self._dirty = False
            low, completed = self.tracker.low_water, self.tracker.completed_above()
        return Commit(self.ref, env.sub.group, env.consumer_id, token, low, completed)

    def commit_done(self, commit: Commit, result: CommitResult | Exception) -> None:
        """``Committing``: handle the result of ``commit``, then release the lock."""
        try:
            if not isinstance(result, Exception):
                self.accepted(
                    result,
                    commit.offset,
                    commit.completed,
                    highest_completed=self.tracker.highest_completed,
                )
                return
            with self._mutex:
                self._dirty = True  # not written: the next round (or the final one) does
            self.commit_failed(result)
        finally:
            self._commit_lock.release()

    def _flush(self) -> bool:
        with self._commit_lock:
            with self._mutex:
                low, completed = self.tracker.low_water, self.tracker.completed_above()
                dirty, self._dirty = self._dirty, False
            if not dirty or self.token is None:
                return True
            env = self.env
            result = env.broker.commit(
                self.ref,
                env.sub.group,
                env.consumer_id,
                self.token,
                low,
                completed,
            )
        return self.accepted(
            result, low, completed, highest_completed=self.tracker.highest_completed
        )

    def finish(self) -> None:
        """No new message starts (``active`` is false); wait for the running ones, then
        commit what completed. Bounded by the client-side lock expiry."""
        self.lanes.purge(self.serial)
        deadline = time.monotonic() + self.env.timings.client_lock_expiry_s
        with self._mutex:
            while self._running and time.monotonic() < deadline:
                self._idle.wait(0.1)
            self._dirty = True
        try:
            if self.release_lock:
                self._flush()
        except REDIS_DOWN as exc:
            self.redis_failed(exc)
        except Exception:
            log.warning("final flush of %s failed", self.ref, exc_info=True)
        finally:
            with self._commit_lock:
                self._closed = True
            self.commits.remove(self)

    def _dead_letter_malformed_key_mode(self, bad: MalformedEntry) -> None:
        entry = malformed_dead_letter(self.ref, self.env.sub.group, bad)
        with self._commit_lock:
            with self._mutex:
                if not bad.foreign:
                    self.tracker.done(bad.offset)
                low, completed = self.tracker.low_water, self.tracker.completed_above()
            result = self.env.broker.dead_letter(
                self.ref,
                self.env.sub.group,
                self.env.consumer_id,
                self.token,
                low,
                entry,
                completed=completed,
            )
        if self.accepted(result, low):
            self.report_malformed(bad, result.dlq_id)

    # -- reporting ---------------------------------------------------------------------
    def key_state(self) -> KeyState:
        """The key-level fields of the queue's snapshot (and of ``key_state`` events)."""
        with self._mutex:
            # The card is rewritten every heartbeat: keep it small (counts are complete).
            blocked = sorted(self.blocked.values(), key=lambda b: b["since_ms"])[:20]
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
            self.emit(ev.KEY_STATE, details=dict(state))
