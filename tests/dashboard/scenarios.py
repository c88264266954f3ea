"""Scenarios for the page and API tests: consumers with handlers that fail on chosen keys,
event ingestion into the test database, and events written with chosen timestamps (for
cases whose expected numbers are computed by hand)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import redis

from lockstep.dashboard.monitor.ingest import Ingester
from lockstep.workers import Consumer, ConsumeStatus, Subscription, Timings, keys
from lockstep.workers import events as ev
from lockstep.workers.hashing import queue_for_key
from lockstep.workers.message import ConsumeContext, Message
from tests.support import probe_until

HANDLER = "tests.dashboard.scenarios.handler"
# Short heartbeats so a consumer's card (state, retries, blocked keys) is fresh within a
# fraction of a second; the rest as in production.
QUICK = Timings(heartbeat_interval_s=0.2, membership_poll_s=0.1)


class FailOn:
    """Fails every attempt of messages whose key is in ``keys`` (raising, like a real
    handler bug), counting them in ``failures``; records the (queue, offset) of every
    message it handled."""

    def __init__(self, *failing: str, error: str = "payment service unavailable") -> None:
        self.failing = set(failing)
        self.error = error
        self.handled: set[tuple[int, int]] = set()
        self.failures = 0
        self._lock = threading.Lock()

    def __call__(self, messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
        if any(m.key in self.failing for m in messages):
            with self._lock:
                self.failures += 1
            raise RuntimeError(self.error)
        with self._lock:
            self.handled.update((m.queue, m.offset) for m in messages)
        return ConsumeStatus.SUCCESS

    def count(self) -> int:
        with self._lock:
            return len(self.handled)


@contextmanager
def consuming(
    redis_url: str,
    topic: str,
    group: str,
    handler: FailOn,
    consumer_id: str | None = None,
    timings: Timings = QUICK,
    **options: Any,
) -> Iterator[Consumer]:
    """One in-process consumer of (topic, group) with ``handler``; ``options`` are
    ``Subscription`` fields (ordering, max_reconsume_times, ...). Stopped after."""
    sub = Subscription(topic, group, handler=HANDLER, **options)
    consumer = Consumer(
        redis_url, [sub], handlers={HANDLER: handler}, timings=timings, consumer_id=consumer_id
    )
    consumer.start()
    try:
        yield consumer
    finally:
        consumer.stop()


def ingest_all(client: redis.Redis) -> int:
    """Store every event in the stream so far (the ingester's own code path)."""
    ingester = Ingester(client)
    total = 0
    while (read := ingester.run_once(block_ms=0)) > 0:
        total += read
    return total


def ingest_until(
    client: redis.Redis, event_type: str, minimum: int = 1, timeout: float = 15.0
) -> int:
    """Ingest until at least ``minimum`` events of ``event_type`` are stored; returns how
    many are (the runtime buffers events up to its flush interval)."""
    from lockstep.dashboard.web.store.models import Event

    def stored() -> int:
        ingest_all(client)
        return Event.objects.filter(type=event_type).count()

    return probe_until(stored, lambda n: n >= minimum, timeout=timeout, interval=0.1)


def redis_now_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def write_event(client: redis.Redis, type_: str, ts_ms: int, **fields: Any) -> None:
    """Append one event to the event stream as the runtime would, at a chosen time."""
    client.xadd(keys.EVENTS, ev.Event(type_, ts_ms, **fields).fields())


def key_on_queue(queue: int, queue_count: int, prefix: str = "order") -> str:
    """The first ``<prefix>-<n>`` key that hashes to ``queue``."""
    n = 0
    while queue_for_key(f"{prefix}-{n}", queue_count) != queue:
        n += 1
    return f"{prefix}-{n}"
