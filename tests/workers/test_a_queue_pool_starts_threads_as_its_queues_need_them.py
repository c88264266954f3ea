"""``QueuePool`` (workers/ordering/scheduler.py) starts its stepping threads as its queues
need them: queues that start and then wait keep one thread, busy queues bring it up to
its size, and a queue started while every thread is in a long step is stepped at once
(docs/reading.md, "How many stepping threads")."""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field

import pytest
import redis

from lockstep.workers.ordering.runner import READY, Handed, Wait
from lockstep.workers.ordering.scheduler import QueuePool
from lockstep.workers.refs import QueueRef
from tests.support import wait_until

THREADS = 8


class _Worker:
    """A queue worker's steps: a start-up step (held until ``start_hold`` is set, if
    given), then ``busy_steps`` batches (each yields READY and then holds its thread
    until ``busy_hold`` is set), then waits for a poke."""

    inline_data_steps = False

    def __init__(
        self,
        queue: int,
        *,
        start_hold: threading.Event | None = None,
        busy_steps: int = 0,
        busy_hold: threading.Event | None = None,
    ) -> None:
        self.ref = QueueRef("pool", queue)
        self.start_hold, self.busy_steps, self.busy_hold = start_hold, busy_steps, busy_hold
        self.started = threading.Event()
        self.done = threading.Event()
        self.stop = threading.Event()

    def steps(self) -> Generator[Wait, Handed, None]:
        self.started.set()
        if self.start_hold is not None:
            self.start_hold.wait(10)
        for _ in range(self.busy_steps):
            yield READY
            if self.busy_hold is not None:
                self.busy_hold.wait(10)
        while not self.stop.is_set():
            yield Wait(None)  # until a poke

    def stepped_out(self) -> None:
        self.done.set()


def _stepping(name: str) -> int:
    return sum(
        1
        for t in threading.enumerate()
        if t.name.startswith(f"lockstep-{name}-") and not t.name.endswith("-reader")
    )


@dataclass
class _Started:
    """A pool and the workers started on it, stopped after the test."""

    pool: QueuePool
    workers: list[_Worker] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.pool.name


@pytest.fixture
def pool(redis_client: redis.Redis, request: pytest.FixtureRequest) -> Iterator[_Started]:
    started = _Started(QueuePool(redis_client, THREADS, request.node.name[-30:]))
    yield started
    for worker in started.workers:
        worker.stop.set()
        started.pool.poke(worker)
    started.pool.stop()
    for worker in started.workers:
        worker.done.wait(5)


def _start(pool: _Started, worker: _Worker) -> _Worker:
    pool.workers.append(worker)
    pool.pool.start(worker)
    return worker


def test_queues_that_start_and_wait_keep_one_thread(pool: _Started) -> None:
    workers = [_start(pool, _Worker(q)) for q in range(40)]

    wait_until(lambda: all(w.started.is_set() for w in workers), 10, "every queue started")
    assert _stepping(pool.name) == 1


def test_busy_queues_bring_the_pool_to_its_size_and_no_further(pool: _Started) -> None:
    hold = threading.Event()
    try:
        for q in range(20):
            _start(pool, _Worker(q, busy_steps=2, busy_hold=hold))

        wait_until(lambda: _stepping(pool.name) >= THREADS, 10, "the pool at its size")
    finally:
        hold.set()
    assert _stepping(pool.name) == THREADS


def test_a_queue_started_while_the_only_thread_is_in_a_long_step_runs_at_once(
    pool: _Started,
) -> None:
    hold = threading.Event()
    long_step = _start(pool, _Worker(0, start_hold=hold))
    wait_until(long_step.started.is_set, 10, "the first queue in its long step")
    try:
        newcomer = _start(pool, _Worker(1))
        wait_until(newcomer.started.is_set, 5, "the second queue stepped while the first holds")
    finally:
        hold.set()
    assert _stepping(pool.name) == 2
