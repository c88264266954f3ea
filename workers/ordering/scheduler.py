"""Every owned queue of a subscription on a bounded pool of threads (docs/reading.md).

``QueuePool`` steps the queue workers' loops (``runner.Wait``) on at most ``threads``
threads, started as the ready queues need them: a worker is in exactly one place at a
time (ready, running, waiting, done), so one queue's batches never overlap and the pool
never runs a queue twice. Waits end by:

- time: a heap of deadlines, checked by the pool threads while they wait for work;
- data: one reader thread sends one ``XREAD BLOCK`` over the streams of every queue
  waiting for data, from each queue's next offset; a stream that answers wakes its queue
  and hands it the entries read (``runner.HAND_COUNT`` at most), or, for a queue whose
  data step only hands them on (``inline_data_steps``), the reader runs that step itself.
  A queue that starts waiting while that read blocks would not be in it, so the reader
  is sent ``CLIENT UNBLOCK`` (once per read) to read again with it;
- a poke (a renewal of a stale lock, a drop): at once.

One ``XREAD`` names keys of many slots, which a Redis Cluster refuses: the reader is for a
standalone Redis (``cluster_pool.ClusterQueuePool`` waits otherwise on a cluster).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, NamedTuple

import redis

from lockstep.workers import keys
from lockstep.workers.connection import own_connection
from lockstep.workers.ordering.runner import HAND_COUNT, Handed, Steppable, Wait, after_offset
from lockstep.workers.ordering.saturation import Saturation
from lockstep.workers.redis_types import Entry, as_bytes, raw_reply, raw_xread

log = logging.getLogger(__name__)

READY, RUNNING, WAITING, DONE = "ready", "running", "waiting", "done"
# The reader's block: how long an idle subscription waits between reads. New waiters do
# not wait for it (CLIENT UNBLOCK), so it only sets the idle command rate.
READ_BLOCK_S = 1.0
# The reader's pause between reads (see _read_forever): at most this much is added to a
# wake-up, and it bounds the reads to a few hundred a second however busy the queues are.
READ_LINGER_S = 0.005
# ... and while the pool is CPU-bound (``saturation``): each read then finds more entries
# per queue, so fewer reads and steps carry the same messages, for up to this much more
# delay where messages already wait for the CPU (docs/reading.md, "The runners").
SATURATED_LINGER_S = 0.02
# A task ready this long while every thread is in a step, and no step ended meanwhile,
# gets a thread of its own (``QueuePool.unstall``): the threads are in long steps. At most
# one such thread per this long, so a process whose threads are merely slow (starved of
# CPU) does not start many at once.
STALL_S = 0.2
# While the pool is CPU-bound (``saturation``), the threads that step at once are halved
# each window, to this many at least (``_active``): under the GIL every one more only
# adds lock and GIL hand-offs. The bound is lifted when a ready task has waited
# ``QUEUED_S`` and the pool is not CPU-bound (steps that wait on I/O). It holds only while
# steps keep ending: once none ended for ``QUEUED_S``, the threads in steps are in long
# ones (a handler's I/O), and an idle thread takes the next ready task.
MIN_ACTIVE = 1
QUEUED_S = 0.01
# After a failed read (Redis away), the reader tries again this often.
READ_RETRY_S = 0.2
# CLIENT UNBLOCK sent before the read reached Redis answers 0: retried this often, this
# many times (the read is on its way: a round trip at most).
UNBLOCK_RETRY_S = 0.001
UNBLOCK_TRIES = 20


@dataclass(eq=False)
class QueueTask:
    worker: Steppable
    steps: Generator[Wait, Handed, None]
    stream: str
    state: str = READY
    poked: bool = False
    generation: int = 0
    data_from: int | None = None
    handed: Handed = None  # what the reader read for it: sent to its next step
    busy: bool = False  # made ready with messages to handle (QueuePool._push_ready)
    ready_at: float = 0.0  # when it was last made ready


def _read_after(waiting: set[QueueTask]) -> str:
    """The ID to read a stream after for its waiting tasks: their lowest ``data_from``."""
    return after_offset(min(task.data_from or 0 for task in waiting))


class _Timer(NamedTuple):
    """A task's deadline; ordered as a tuple (``seq`` is unique, so a task is never
    compared), in C: a cluster's pool keeps a timer per waiting queue."""

    deadline: float
    seq: int
    task: QueueTask
    generation: int


class QueuePool:
    """The runner of a subscription's queues on a standalone Redis: up to ``threads`` stepping
    threads and one reader (module docstring)."""

    def __init__(self, client: redis.Redis, threads: int, name: str) -> None:
        self.client = client
        self.threads = threads
        self.name = name
        self._cond = threading.Condition()
        self._ready: deque[QueueTask] = deque()
        self._timers: list[_Timer] = []
        self._seq = itertools.count()
        self._tasks: dict[int, QueueTask] = {}  # id(worker) -> task
        # Stream -> the tasks waiting for its entries (one, but for a queue handed over
        # within this process while its previous worker still steps out).
        self._waiting_data: dict[str, set[QueueTask]] = {}
        # Stream -> the ID its read starts after (the lowest ``data_from`` of its waiting
        # tasks), kept as tasks start and stop waiting: the reader copies it whole.
        self._read_after: dict[str, str] = {}
        self._waiters_added = threading.Event()
        self._reader_blocked = False
        self._unblock_sent = False
        self._cycle = 0  # the reader's reads, counted
        self._reader_id: int | None = None
        self._stopped = False
        self._stepping = 0  # stepping threads started, up to ``threads``
        self._idle = 0  # stepping threads waiting for a task
        self._grown_at = 0.0  # when the last stepping thread was started (``unstall``)
        self._step_ended_at = 0.0  # when a stepping thread last ended a step
        self._cpu = Saturation()  # whether the process is CPU-bound (``useful_threads``)
        self._running_busy = 0  # stepping threads running a busy task's step
        self._active = threads  # how many stepping threads may be in steps at once
        self._reader_client: redis.Redis | None = None

    # -- the runner interface ----------------------------------------------------------
    def start(self, worker: Steppable) -> None:
        with self._cond:
            if self._stepping == 0:
                self._start_reader()
            task = QueueTask(worker, worker.steps(), keys.stream(worker.ref))
            self._tasks[id(worker)] = task
            self._task_started(task)
            self._push_ready(task, busy=False)

    def poke(self, worker: Steppable) -> None:
        with self._cond:
            task = self._tasks.get(id(worker))
            if task is None:
                return
            if task.state == RUNNING:
                task.poked = True
            elif task.state == WAITING:
                self._wake(task, task.generation)

    def stop(self) -> None:
        """Stop the threads once every worker stepped out (the subscription drops its
        queues first); a worker still stepping keeps its thread."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._waiters_added.set()
        self._unblock_reader(self._cycle)

    # -- threads -----------------------------------------------------------------------
    def _push_ready(self, task: QueueTask, *, busy: bool) -> None:
        """Queue ``task`` to be stepped (under the lock). ``busy``: it has messages to
        handle (entries came, or it yielded after a batch). Busy tasks grow the pool
        (``_grow``), and so does a thread taking one. The one-off steps of queues
        starting, stopping or woken early grow it only when every thread runs a busy
        step, or when one has waited ``STALL_S`` with no thread idle (``unstall``), so a
        process whose queues are mostly idle keeps a thread or two."""
        task.state = READY
        task.busy = busy
        self._ready.append(task)
        task.ready_at = time.monotonic()
        if not self._at_active_bound(task.ready_at):
            self._cond.notify()
        if busy or self._running_busy >= self._stepping:
            self._grow()

    def unstall(self) -> None:
        """A task ready for ``STALL_S`` while no thread is idle: every thread is in a long
        step (a handler, a key-ordered queue's finish waiting for its lanes), and one more
        thread takes it (one per ``STALL_S``), so a hand-over does not wait behind it.
        Called by the threads that wake periodically whatever the queues do: the reader
        (at least every ``READ_BLOCK_S``), the listeners."""
        with self._cond:
            self._unstall()

    def _unstall(self) -> None:
        """``unstall``, under the lock: only when no step ended for ``STALL_S`` either
        (threads that end steps take the ready tasks in turn)."""
        now = time.monotonic()
        waited = now - self._ready[0].ready_at if self._ready else 0.0
        stuck = now - self._step_ended_at >= STALL_S and now - self._grown_at >= STALL_S
        if waited >= STALL_S and stuck:
            self._active = min(self.threads, self._active + 1)
            if self._idle:
                self._cond.notify()
            else:
                self._grow(stalled=True)

    def useful_threads(self) -> int:
        """How many stepping threads the steps can use (under the lock, or as a hint).
        Python code runs one thread at a time, so once the process has all the CPU it can
        get, mostly for this pool's steps (``saturation``), another thread would only
        contend for it: the pool keeps the threads it has. Steps that mostly wait (a
        handler's I/O) leave it below that, and the pool grows to ``threads``. Two until a
        window was measured."""
        if self._cpu.saturated is None:
            return min(2, self.threads)
        return self._stepping if self._cpu.saturated else self.threads

    def _grow(self, *, stalled: bool = False) -> None:
        """Start a stepping thread if tasks wait that no idle thread will take, up to
        ``useful_threads`` (``threads`` when ``stalled``: every thread is in a long step).
        Under the lock."""
        most = self.threads if stalled else min(self._active, self.useful_threads())
        if len(self._ready) <= self._idle or self._stepping >= most:
            return
        self._grown_at = time.monotonic()
        name = f"lockstep-{self.name}-{self._stepping}"
        self._stepping += 1
        threading.Thread(target=self._step_forever, name=name, daemon=True).start()

    def _start_reader(self) -> None:
        # The reader's own connection: CLIENT UNBLOCK names it by its id.
        self._reader_client = own_connection(self.client)
        self._reader_client.set_response_callback("XREAD", raw_reply)  # raw_xread parses
        name = f"lockstep-{self.name}-reader"
        threading.Thread(target=self._read_forever, name=name, daemon=True).start()

    def ending(self) -> bool:
        """Whether the pool was stopped and every worker stepped out (under the lock, or
        as a hint): the threads that serve it end."""
        return self._stopped and not self._tasks

    def _step_forever(self) -> None:
        with self._cond:
            self._cpu.add_current_thread()
        task = self._next_task()
        while task is not None:
            task = self._step(task) or self._next_task()
        with self._cond:
            self._cpu.close()

    def _step(self, task: QueueTask) -> QueueTask | None:
        """Run a stepping thread's ``task``'s next step (it is RUNNING, taken by this
        thread), then put it where the step's ``Wait`` says, mark the time for
        ``unstall`` and ``useful_threads``, and take the next ready task in the same
        hold of the lock, which it returns: one hold per step, not two, where a busy
        pool's threads meet. The steps a reader or an armer runs go through
        ``_step_inline``."""
        wait = self._advance(task)
        if wait is None:
            self._finish(task)
            return None
        with self._cond:
            self._timed()
            self._step_ended(task)
            unblock = self._park(task, wait)
            self._fire_timers()
            following = self._take_ready()
        if unblock:
            self._unblock_reader(unblock)
        return following

    def _advance(self, task: QueueTask) -> Wait | None:
        """Run ``task``'s next step (outside the lock); what it waits for next, or None
        once its steps ended."""
        handed, task.handed = task.handed, None
        try:
            return task.steps.send(handed)  # send(None) starts it
        except StopIteration:
            return None
        except Exception:  # the steps catch their own errors; a bug ends the worker
            log.exception("queue %s steps failed", task.worker.ref)
            return None

    def _step_inline(self, tasks: list[QueueTask]) -> None:
        """Step ``tasks`` (taken by ``_hand`` for the thread that read their entries),
        then put them where their steps' waits say, all in one hold of the lock: a
        thousand busy queues are hundreds of such steps per read, each a few
        microseconds, and a hold of the lock each cost about as much again where the
        stepping threads meet (docs/reading.md, "The runners")."""
        parked: list[tuple[QueueTask, Wait]] = []
        for task in tasks:
            wait = self._advance(task)
            if wait is None:
                self._finish(task)
            else:
                parked.append((task, wait))
        unblock = 0
        with self._cond:
            for task, wait in parked:
                self._step_ended(task)
                unblock = self._park(task, wait) or unblock
        if unblock:
            self._unblock_reader(unblock)

    def linger_s(self, idle_s: float) -> float:
        """The pause of the thread that reads for the waiting queues (the reader, or a
        cluster's armer) after a read: ``idle_s``, or ``SATURATED_LINGER_S`` while the
        last window found the pool CPU-bound. Read without the lock: a window late at
        most (the first wake-up after a busy spell may wait the longer pause)."""
        return SATURATED_LINGER_S if self._cpu.saturated else idle_s

    def _timed(self) -> None:
        """A stepping thread ended a step (under the lock): measure whether the process is
        CPU-bound once a window has passed (``useful_threads``, ``_active``)."""
        now = time.monotonic()
        self._step_ended_at = now
        if self._cpu.measure(now) and self._cpu.saturated is not None:
            self._adjust_active(now)

    def _adjust_active(self, now: float) -> None:
        """Once a window (under the lock): half as many threads in steps at once while the
        pool is CPU-bound; while it is not and a ready task waits, as many as it has (a
        handler's I/O needs them at once, not one a window). Halved, not one fewer: a
        single window that was not CPU-bound (a pause, a slow reply) lifts the bound, and
        must not leave 16 threads contending for the next 15 windows."""
        if self._cpu.saturated:
            stepping_now = self._stepping - self._idle
            self._active = max(MIN_ACTIVE, min(self._active, stepping_now) // 2)
            return
        waiting = bool(self._ready) and now - self._ready[0].ready_at >= QUEUED_S
        if waiting and self._active < self.threads:
            self._active = self.threads
            self._cond.notify_all()

    def _next_task(self) -> QueueTask | None:
        with self._cond:
            while True:
                self._fire_timers()
                task = self._take_ready()
                if task is not None:
                    return task
                if self.ending():
                    return None
                timeout = self._timers[0].deadline - time.monotonic() if self._timers else None
                self._idle += 1
                try:
                    self._cond.wait(timeout if timeout is None else max(0.0, timeout))
                finally:
                    self._idle -= 1

    def _take_ready(self) -> QueueTask | None:
        """The next ready task, taken (RUNNING) by the calling stepping thread; None when
        none is ready, or when as many other threads as may (``_active``) are in steps.
        Under the lock."""
        if not self._ready or self._at_active_bound(time.monotonic(), taking=True):
            return None
        task = self._ready.popleft()
        task.state = RUNNING
        if task.busy:
            self._running_busy += 1
            self._grow()
        return task

    def _at_active_bound(self, now: float, *, taking: bool = False) -> bool:
        """Whether as many threads as may (``_active``) are in steps, and steps keep
        ending (``QUEUED_S``); ``taking``: the calling thread, not idle, is one of them.
        Under the lock."""
        in_steps = self._stepping - self._idle - (1 if taking else 0)
        return in_steps >= self._active and now - self._step_ended_at < QUEUED_S

    def _finish(self, task: QueueTask) -> None:
        task.steps.close()
        with self._cond:
            self._step_ended(task)
            task.state = DONE
            self._stop_waiting_data(task)
            if self._tasks.get(id(task.worker)) is task:
                del self._tasks[id(task.worker)]
            self._task_done(task)
            self._cond.notify_all()
        task.worker.stepped_out()

    def _step_ended(self, task: QueueTask) -> None:
        if task.busy:
            task.busy = False
            self._running_busy -= 1

    def _task_started(self, task: QueueTask) -> None:
        """A worker was given to the pool (under the lock), for a subclass to note."""

    def _task_done(self, task: QueueTask) -> None:
        """A worker stepped out (under the lock): what a subclass keeps for it can go."""

    # -- waiting (under the condition's lock) ------------------------------------------
    def _park(self, task: QueueTask, wait: Wait) -> int:
        """Put ``task`` where ``wait`` says; returns the reader's read to unblock (its
        cycle number) when the task joins the waiters of data during it, else 0."""
        if task.poked or (wait.seconds == 0 and wait.data_from is None):
            self._push_ready(task, busy=wait.busy and not task.poked)
            task.poked = False
            return 0
        task.state = WAITING
        task.generation += 1
        if wait.seconds is not None:
            deadline = time.monotonic() + max(0.0, wait.seconds)
            timer = _Timer(deadline, next(self._seq), task, task.generation)
            heapq.heappush(self._timers, timer)
            if self._timers[0] is timer:
                # The earliest now: an idle thread waiting for a later one (or for none)
                # waits again for this one. A later deadline wakes nobody: on a cluster
                # every waiting queue has one (docs/reading.md, "On a Redis Cluster").
                self._cond.notify()
        if wait.data_from is not None:
            task.data_from = wait.data_from
            waiting = self._waiting_data.setdefault(task.stream, set())
            waiting.add(task)
            self._read_after[task.stream] = _read_after(waiting)
            self._waiters_added.set()
            if self._reader_blocked and not self._unblock_sent:
                self._unblock_sent = True
                return self._cycle
        return 0

    def _wake(
        self, task: QueueTask, generation: int, handed: Handed = None, *, data: bool = False
    ) -> None:
        """Make a waiting ``task`` ready; ``data``: entries came for it (``handed``, or
        a wake-up that says so)."""
        if task.state != WAITING or task.generation != generation:
            return  # woken already, by something else
        task.generation += 1
        task.handed = handed
        self._stop_waiting_data(task)
        self._push_ready(task, busy=data or handed is not None)

    def _stop_waiting_data(self, task: QueueTask) -> None:
        waiting = self._waiting_data.get(task.stream)
        if waiting is not None and task in waiting:
            waiting.discard(task)
            if waiting:
                self._read_after[task.stream] = _read_after(waiting)
            else:
                del self._waiting_data[task.stream]
                del self._read_after[task.stream]

    def _fire_timers(self) -> None:
        now = time.monotonic()
        while self._timers and self._timers[0].deadline <= now:
            timer = heapq.heappop(self._timers)
            self._wake(timer.task, timer.generation)

    # -- the reader --------------------------------------------------------------------
    def _read_forever(self) -> None:
        while True:
            with self._cond:
                self._unstall()
                if self.ending():
                    return
                wanted = self._wanted()
                self._cycle += 1
                self._reader_blocked = bool(wanted)
                self._unblock_sent = False
                self._waiters_added.clear()
            if not wanted:
                self._waiters_added.wait(READ_BLOCK_S)
                continue
            try:
                reply = self._read(wanted)
            except redis.RedisError:
                # Every waiting queue tries its own read: it meets the failure and
                # handles it (an outage told once, the queue started again from Redis).
                self._wake_all_waiting()
                time.sleep(READ_RETRY_S)
                continue
            finally:
                with self._cond:
                    self._reader_blocked = False
            self._wake_streams({as_bytes(s).decode(): found for s, found in reply.items()})
            # A read cut short (entries came, or a queue started waiting) is followed by the
            # next one after a moment: under load that moment gathers the queues that wait
            # next, and the entries they wait for, into one read instead of one each.
            time.sleep(self.linger_s(READ_LINGER_S))

    def _wanted(self) -> dict[str, str]:
        """Stream -> the ID to read after: the lowest next offset of its waiting queues."""
        return dict(self._read_after)

    def _read(self, wanted: dict[str, str]) -> dict[bytes, list[Entry]]:
        assert self._reader_client is not None
        if self._reader_id is None:
            self._reader_id = int(self._reader_client.client_id())
        streams: dict[Any, Any] = dict(wanted)
        block = int(READ_BLOCK_S * 1000)
        return raw_xread(self._reader_client.xread(streams, count=HAND_COUNT, block=block))

    def _unblock_reader(self, cycle: int) -> None:
        """End the reader's read ``cycle`` early. The read may not have reached Redis
        yet (CLIENT UNBLOCK then answers 0): tried again for a few milliseconds while
        that read is still the reader's current one."""
        for _ in range(UNBLOCK_TRIES):
            reader = self._reader_id
            if reader is None:
                return
            try:
                if self.client.client_unblock(reader):
                    return
            except redis.RedisError:
                return
            with self._cond:
                if self._cycle != cycle or not self._reader_blocked:
                    return
            time.sleep(UNBLOCK_RETRY_S)
        # Blocked, but not under that id: the reader reconnected. It asks for its id
        # again before its next read.
        self._reader_id = None

    def _wake_streams(self, found: dict[str, list[Entry]]) -> None:
        """Hand each stream's entries to its waiting tasks. A task whose data step only
        hands them on (``inline_data_steps``) is stepped here, by the reader, rather
        than woken for a stepping thread: one thread hand-off less per batch, which is
        most of what a batch of a few messages costs when a thousand queues are busy."""
        if not found:
            return
        inline: list[QueueTask] = []
        with self._cond:
            for stream, entries in found.items():
                for task in list(self._waiting_data.get(stream, ())):
                    self._hand(task, list(entries), inline)
        self._step_inline(inline)

    def _hand(self, task: QueueTask, entries: list[Entry], inline: list[QueueTask]) -> None:
        """Wake a waiting ``task`` with the entries read for it (under the lock); one whose
        data step only hands them on is taken (RUNNING) and added to ``inline``, for the
        thread that read them to step (``_step``) once it let go of the lock."""
        if not (task.worker.inline_data_steps and task.state == WAITING):
            self._wake(task, task.generation, entries)
            return
        task.generation += 1
        task.handed = entries
        self._stop_waiting_data(task)
        task.state = RUNNING
        inline.append(task)

    def _wake_all_waiting(self) -> None:
        with self._cond:
            for tasks in list(self._waiting_data.values()):
                for task in list(tasks):
                    self._wake(task, task.generation)
