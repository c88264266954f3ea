"""Lanes: key-level parallelism for the ``key`` ordering mode.

A subscription's consumer has T lane threads shared by all the queues it owns. A key with
messages in a lane stays in that lane; a key with none goes to the less busy (fewer
messages waiting) of the two lanes its hash names (``LanePool.submit``, docs/lanes.md §2).
Inside a lane every key has its own FIFO; the lane runs one message at a time, taking
keys in the order they became ready, so:
- per key, messages run one at a time in offset order (a key with messages in a lane gets
  its next ones in the same lane, so two never run at once);
- a key whose head message failed waits for its back-off without blocking the lane: the
  lane serves its other keys meanwhile (per-key blocking).

What to do with a message is decided by its queue worker (``LaneClient.process``); the
lane only schedules.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from lockstep.workers.hashing import stable_hash
from lockstep.workers.message import Message

log = logging.getLogger(__name__)


class Verdict(Enum):
    DONE = "done"  # the head message is finished (handled or dead-lettered): next one
    RETRY = "retry"  # try the head message again after the returned delay
    PARK = "park"  # the key is held: hand its remaining messages back for parking
    DISCARD = "discard"  # the queue was lost: forget the key's messages


@dataclass
class Task:
    message: Message
    client: LaneClient
    parked_member: str = ""  # set when the message comes from the key's parked set


class LaneClient(Protocol):
    serial: int

    def process(self, task: Task) -> tuple[Verdict, float]: ...

    def park_tasks(self, key: str, tasks: list[Task]) -> None:
        """Called once for every PARK verdict, with the key's messages after the head
        (possibly none, e.g. when the queue was purged meanwhile)."""


KeyRef = tuple[int, str]  # (queue worker serial, key)


@dataclass
class LaneStats:
    index: int
    busy: bool
    keys: int
    waiting: int
    retrying: int


@dataclass
class _LaneState:
    keys: dict[KeyRef, deque[Task]] = field(default_factory=dict)
    ready: deque[KeyRef] = field(default_factory=deque)
    retry: list[tuple[float, int, KeyRef]] = field(default_factory=list)


class Lane:
    def __init__(self, index: int, stop: threading.Event, placed: dict[KeyRef, Lane]) -> None:
        self.index = index
        self._stop = stop
        self._cond = threading.Condition()
        self._state = _LaneState()
        self._running: KeyRef | None = None  # the key whose head message runs now
        # The pool's map of the keys with messages in a lane (or running there) to that
        # lane; this lane adds and removes its own keys, under its lock.
        self._placed = placed
        self.pending = 0  # messages in the lane, running included (read without the lock)
        self._seq = itertools.count()
        self._thread = threading.Thread(
            target=self._run, name=f"lockstep-lane-{index}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float) -> None:
        with self._cond:
            self._cond.notify_all()
        self._thread.join(timeout)

    def submit(self, ref: KeyRef, task: Task) -> bool:
        """Queue ``task`` behind its key's messages here, if the key is placed in this
        lane (``LanePool.submit``); False if it no longer is (its messages left meanwhile)."""
        with self._cond:
            if self._placed.get(ref) is not self:
                return False
            self.pending += 1
            queue = self._state.keys.get(ref)
            if queue is None:
                self._state.keys[ref] = deque([task])
                self._state.ready.append(ref)
                self._cond.notify()
            else:
                queue.append(task)
            return True

    def purge(self, serial: int) -> int:
        """Forget every message of one queue worker (its queue was dropped)."""
        with self._cond:
            st = self._state
            gone = [ref for ref in st.keys if ref[0] == serial]
            count = sum(len(st.keys.pop(ref)) for ref in gone)
            self.pending -= count
            for ref in gone:
                if ref != self._running:  # a running key stays placed until it settles
                    self._unplace(ref)
            st.ready = deque(r for r in st.ready if r[0] != serial)
            st.retry = [e for e in st.retry if e[2][0] != serial]
            heapq.heapify(st.retry)
            return count

    def _unplace(self, ref: KeyRef) -> None:
        """The key has no message here any more (under the lock): it may go elsewhere."""
        if self._placed.get(ref) is self:
            del self._placed[ref]

    def waiting_for(self, ref: KeyRef) -> int:
        """How many messages of one key are in this lane (including its head)."""
        with self._cond:
            queue = self._state.keys.get(ref)
            return len(queue) if queue else 0

    def stats(self) -> LaneStats:
        with self._cond:
            st = self._state
            return LaneStats(
                self.index,
                self._running is not None,
                len(st.keys),
                sum(len(q) for q in st.keys.values()),
                len(st.retry),
            )

    def _next(self) -> tuple[KeyRef, Task] | None:
        st = self._state
        with self._cond:
            while not self._stop.is_set():
                now = time.monotonic()
                while st.retry and st.retry[0][0] <= now:
                    _, _, ref = heapq.heappop(st.retry)
                    if ref in st.keys:
                        st.ready.append(ref)
                while st.ready:
                    ref = st.ready.popleft()
                    queue = st.keys.get(ref)
                    if queue:
                        self._running = ref
                        return ref, queue[0]
                timeout = st.retry[0][0] - now if st.retry else 0.5
                self._cond.wait(max(0.001, min(timeout, 0.5)))
        return None

    def _run(self) -> None:
        while True:
            nxt = self._next()
            if nxt is None:
                return
            ref, task = nxt
            try:
                verdict, delay = task.client.process(task)
            except Exception:  # a bug in processing must not kill the lane: retry later
                verdict, delay = Verdict.RETRY, 1.0
            rest = self._settle(ref, verdict, delay)
            if verdict is Verdict.PARK:
                # Even with nothing to park: the client learns the hold is fully written.
                try:
                    task.client.park_tasks(ref[1], rest)
                except Exception:  # Redis down: not done, so the queue's next owner parks them
                    log.exception("parking %d messages of a held key failed", len(rest))

    def _settle(self, ref: KeyRef, verdict: Verdict, delay: float) -> list[Task]:
        """Apply the verdict to the key's FIFO; on PARK, return the messages after the
        head (they leave the lane)."""
        st = self._state
        with self._cond:
            self._running = None
            queue = st.keys.get(ref)
            if queue is None:  # purged meanwhile
                self._unplace(ref)
                return []
            if verdict is Verdict.DONE:
                queue.popleft()
                self.pending -= 1
                if queue:
                    st.ready.append(ref)
                else:
                    del st.keys[ref]
                    self._unplace(ref)
            elif verdict is Verdict.RETRY:
                heapq.heappush(st.retry, (time.monotonic() + delay, next(self._seq), ref))
            else:
                del st.keys[ref]
                self.pending -= len(queue)
                self._unplace(ref)
                if verdict is Verdict.PARK:
                    return list(queue)[1:]
        return []


def lane_hash(key: str) -> int:
    """The upper half of the key's crc32. The queue is ``crc32 % queues`` (low bits): with
    the same value for lanes, ``lane % queues`` would equal the queue and each queue would
    use only lanes/queues of its lanes. The upper bits are independent of the low ones and
    keep crc32's even spread (a general-purpose hash spreads sequential ids less evenly)."""
    return stable_hash(key) >> 16


def lane_choices(key: str, lanes: int) -> tuple[int, int]:
    """The two lanes a key may go to (the same one twice with a single lane): its
    ``lane_hash`` modulo ``lanes``, and another drawn from the same upper bits."""
    h = lane_hash(key)
    first = h % lanes
    if lanes == 1:
        return first, first
    return first, (first + 1 + (h // lanes) % (lanes - 1)) % lanes


class LanePool:
    """T lanes. A key with messages in a lane (or running there) gets its next ones in that
    lane; a key with none goes to the less busy of its two ``lane_choices`` (docs/lanes.md
    §2), so a lane holding hotter keys than the others is not also given the new ones."""

    def __init__(self, count: int) -> None:
        self._stop = threading.Event()
        # (queue worker, key) -> the lane its messages are in. Each lane adds and removes
        # its own keys under its lock; a submit places a key with ``setdefault``.
        self._placed: dict[KeyRef, Lane] = {}
        self.lanes = [Lane(i, self._stop, self._placed) for i in range(count)]
        self._started = False

    def start(self) -> None:
        if not self._started:
            self._started = True
            for lane in self.lanes:
                lane.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        deadline = time.monotonic() + timeout
        for lane in self.lanes:
            lane.join(max(0.0, deadline - time.monotonic()))

    def submit(self, task: Task) -> None:
        """Queue ``task`` in its key's lane: the one its messages are in, else the less
        busy of its two choices. A key's messages are then never in two lanes at once:
        a lane unplaces a key only under its lock, once it holds none of its messages,
        and a submit appends only to the lane the key is placed in (else tries again)."""
        ref = (task.client.serial, task.message.key)
        while True:
            lane = self._placed.get(ref)
            if lane is None:
                lane = self._placed.setdefault(ref, self._choose(task.message.key))
            if lane.submit(ref, task):
                return

    def _choose(self, key: str) -> Lane:
        first, second = lane_choices(key, len(self.lanes))
        a, b = self.lanes[first], self.lanes[second]
        return b if b.pending < a.pending else a

    def waiting_for(self, ref: KeyRef) -> int:
        """How many messages of one key are in its lane (including its head)."""
        lane = self._placed.get(ref)
        return lane.waiting_for(ref) if lane is not None else 0

    def purge(self, serial: int) -> int:
        return sum(lane.purge(serial) for lane in self.lanes)

    def stats(self) -> list[LaneStats]:
        return [lane.stats() for lane in self.lanes]
