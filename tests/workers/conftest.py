from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from lockstep.workers import Consumer, Producer, Subscription
from tests.workers.harness import FAST, RECORD_HANDLER, ConsumerProcess

SpawnConsumer = Callable[..., ConsumerProcess]
StartConsumer = Callable[..., Consumer]


@pytest.fixture
def spawn_consumer(
    redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> Iterator[SpawnConsumer]:
    """Start ``lockstep consume`` children; every one still running at the end of the
    test is resumed and killed, and their output is printed (shown when a test fails)."""
    started: list[ConsumerProcess] = []

    def spawn(
        topic: str, group: str, consumer_id: str, *args: str, env: dict[str, str] | None = None
    ) -> ConsumerProcess:
        proc = ConsumerProcess(
            redis_url, topic, group, consumer_id, tmp_path, list(args), dict(env or {})
        )
        started.append(proc.start())
        return proc

    yield spawn
    for proc in started:
        if proc.running():
            proc.signal(signal.SIGCONT)
            proc.kill()
        print(f"--- {proc.consumer_id} (pid {proc.pid}) ---\n{proc.output()[-4000:]}")


@pytest.fixture
def start_consumer(redis_client: redis.Redis, redis_url: str) -> Iterator[StartConsumer]:
    """Start in-process consumers of the recording handler with the short test timings;
    they are stopped at the end of the test."""
    started: list[Consumer] = []

    def start(topic: str, group: str, consumer_id: str, **sub: Any) -> Consumer:
        subscription = Subscription(topic=topic, group=group, handler=RECORD_HANDLER, **sub)
        consumer = Consumer(redis_url, [subscription], timings=FAST, consumer_id=consumer_id)
        consumer.start()
        started.append(consumer)
        return consumer

    yield start
    for consumer in started:
        consumer.stop()


@pytest.fixture
def producer(redis_client: redis.Redis, redis_url: str) -> Iterator[Producer]:
    p = Producer(redis_url)
    yield p
    p.close()
