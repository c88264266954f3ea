"""Helpers for the dashboard tests: drive the real runtime (topic, producer, consumer)
and wait for what it does to show up."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

from lockstep.workers import Consumer, ConsumeStatus, Producer, SendResult, Subscription
from lockstep.workers.message import ConsumeContext, Message

T = TypeVar("T")
HANDLER = "tests.dashboard.helpers.recorded"


class Recorder:
    """A handler that remembers every (queue, offset) it handled successfully."""

    def __init__(self) -> None:
        self.handled: set[tuple[int, int]] = set()
        self._lock = threading.Lock()

    def __call__(self, messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
        with self._lock:
            self.handled.update((m.queue, m.offset) for m in messages)
        return ConsumeStatus.SUCCESS

    def count(self) -> int:
        with self._lock:
            return len(self.handled)


@contextmanager
def running_consumer(redis_url: str, topic: str, group: str) -> Iterator[tuple[Consumer, Recorder]]:
    """One in-process consumer of ``group``; stopped (queues finished and unlocked) after."""
    recorder = Recorder()
    consumer = Consumer(
        redis_url, [Subscription(topic, group, handler=HANDLER)], handlers={HANDLER: recorder}
    )
    consumer.start()
    try:
        yield consumer, recorder
    finally:
        consumer.stop()


def produce(redis_url: str, topic: str, keys: Iterable[str]) -> list[SendResult]:
    producer = Producer(redis_url)
    try:
        return [producer.send(topic, key, b'{"step": "created"}') for key in keys]
    finally:
        producer.close()


def per_queue(results: Iterable[SendResult]) -> Counter[int]:
    """How many of ``results`` went to each queue."""
    return Counter(r.queue for r in results)


def wait_until(
    probe: Callable[[], T], done: Callable[[T], bool], timeout: float = 15.0, interval: float = 0.05
) -> T:
    """Call ``probe`` until ``done(value)``; return the last value either way, so the caller
    asserts on what was really observed."""
    deadline = time.monotonic() + timeout
    value = probe()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(interval)
        value = probe()
    return value
