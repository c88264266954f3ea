"""Lock expiry is decided by Redis's clock, never by the consumers': a consumer whose wall
clock is an hour off is granted, renews and loses locks exactly as one with a true clock,
and nobody can take a live lock because of their own clock."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis

from lockstep.workers import Consumer, Producer, Subscription, create_topic
from lockstep.workers.broker import Broker
from lockstep.workers.refs import QueueRef
from tests.support import wait_until
from tests.workers.harness import (
    FAST,
    RECORD_HANDLER,
    handled_count,
    lock_owners,
    redis_now_ms,
    wait_for_lock_expiry,
)

REF = QueueRef("orders", 0)


def _lock_field(client: redis.Redis, queue: int, field: str) -> int:
    return int(client.hget(f"ls:{{orders:{queue}}}:lock:billing", field) or 0)


@pytest.fixture
def skewed_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's wall clock one hour ahead (``time.monotonic`` is not a wall clock)."""
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 3600)
    yield


def test_it_stamps_the_expiry_from_redis_time_whatever_the_client_clock(
    redis_client: redis.Redis, skewed_clock: None
) -> None:
    broker = Broker(redis_client)
    before = redis_now_ms(redis_client)
    [grant] = broker.lock_batch([REF], "billing", "fast-clock", ttl_s=2.0)
    after = redis_now_ms(redis_client)

    assert grant.token == 1
    expires = _lock_field(redis_client, 0, "expires_at")
    assert before + 2000 <= expires <= after + 2000


def test_it_refuses_a_live_lock_and_frees_an_expired_one_by_redis_time(
    redis_client: redis.Redis, skewed_clock: None
) -> None:
    broker = Broker(redis_client)
    broker.lock_batch([REF], "billing", "holder", ttl_s=1.0)

    [refused] = broker.lock_batch([REF], "billing", "other", ttl_s=1.0)
    wait_for_lock_expiry(redis_client, REF, "billing")
    [granted] = broker.lock_batch([REF], "billing", "other", ttl_s=1.0)

    assert refused.token == 0, "a client an hour ahead must not see the lock as expired"
    assert granted.token == 2 and granted.new


def test_a_consumer_with_a_skewed_clock_holds_and_renews_its_queues(
    redis_client: redis.Redis, redis_url: str, skewed_clock: None
) -> None:
    create_topic(redis_client, "orders", 2)
    consumer = Consumer(
        redis_url,
        [Subscription(topic="orders", group="billing", handler=RECORD_HANDLER)],
        timings=FAST,
        consumer_id="skewed",
    )
    consumer.start()
    producer = Producer(redis_url)
    try:
        wait_until(lambda: len(lock_owners(redis_client, "orders", "billing", 2)) == 2, 10, "locks")
        # Past the first grants' expiry by Redis's clock (several renewals, one per
        # lock_renew_interval_s): only renewals can have kept the locks.
        granted_ms = max(_lock_field(redis_client, q, "granted_at") for q in range(2))
        first_expiry_ms = granted_ms + int(FAST.lock_ttl_s * 1000)
        wait_until(
            lambda: redis_now_ms(redis_client) > first_expiry_ms,
            FAST.lock_ttl_s + 10,
            "Redis's clock to pass the first grants' expiry",
        )
        for n in range(20):
            producer.send("orders", f"k-{n}", b'{"seq": 0}')
        wait_until(lambda: handled_count(redis_client) >= 20, 10, "20 messages handled")
        owners = lock_owners(redis_client, "orders", "billing", 2)
    finally:
        consumer.stop()
        producer.close()
    assert owners == {0: "skewed", 1: "skewed"}
    tokens = [redis_client.hget(f"ls:{{orders:{q}}}:lock:billing", "token") for q in range(2)]
    assert tokens == [b"1", b"1"], "renewals kept the first grant: no expiry was seen"
