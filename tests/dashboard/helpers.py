"""Helpers for the dashboard tests: drive the real runtime (topic, producer, consumer)
and wait for what it does to show up."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from lockstep.workers import Consumer, ConsumeStatus, Producer, SendResult, Subscription
from lockstep.workers.message import ConsumeContext, Message

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


def point_celery_at(url: str) -> None:
    """The dashboard's Celery app sends to ``url``, with nothing of the last broker left:
    ``app.close()`` keeps the producer pool when the app's connection pool was never
    made, and a send after it went through that pool to the last broker (an earlier
    test's, on this worker)."""
    from lockstep.dashboard.celery import app

    app.close()
    amqp: Any = app.amqp  # the stubs do not declare the pool's attribute
    amqp._producer_pool = None
    app.conf.update(broker_url=url)
