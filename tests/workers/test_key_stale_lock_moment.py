"""A client-side lock can go stale for a moment and then be renewed with the same token (the
renewal thread ran late, but the broker lock had not expired). Meanwhile no handler may
start (docs/fencing.md §3), but the queue's messages must not be thrown away either: when the
lock is renewed, every key goes on where it stopped — nothing is lost, nothing reordered,
the low-water mark reaches the end."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis

from lockstep.workers import Consumer, Producer, Subscription, Timings, create_topic
from lockstep.workers.config import Ordering
from tests.support import wait_until
from tests.workers.handlers import DELAY_ENV
from tests.workers.harness import (
    RECORD_HANDLER,
    body,
    events,
    fully_committed,
    handled,
    order_violations,
)

TOPIC, GROUP = "orders", "billing-stale"
# At least 1,500 messages, produced over ~4 s, and on until the lock went stale once while
# messages were still coming (the first stale moment is ~4 s after the start).
KEYS, PER_KEY, MAX_ROUNDS = 50, 30, 80
# Renewals come every 1.95 s on a 0.3 s membership poll, i.e. every 2.1 s in practice,
# while the client-side lock counts as expired after 2 s: it is stale ~0.1 s of every
# renewal cycle. The broker lock (5 s) does not expire, so each renewal keeps the token.
LATE_RENEWALS = Timings(
    lock_ttl_s=5.0,
    client_lock_expiry_s=2.0,
    lock_renew_interval_s=1.95,
    rebalance_interval_s=5.0,
    membership_poll_s=0.3,
    heartbeat_interval_s=0.3,
    heartbeat_timeout_s=1.5,
    poll_block_s=0.1,
    event_flush_interval_s=0.1,
)


@pytest.fixture
def consumer(
    redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Consumer]:
    monkeypatch.setenv(DELAY_ENV, "4")
    sub = Subscription(
        topic=TOPIC,
        group=GROUP,
        handler=RECORD_HANDLER,
        ordering=Ordering.KEY,
        lanes=4,
        flush_interval_ms=50,
    )
    c = Consumer(redis_url, [sub], timings=LATE_RENEWALS, consumer_id="keys-stale")
    yield c
    c.stop()


def _watch_lock(consumer: Consumer, stop: threading.Event, seen: list[bool]) -> None:
    """Record whether the queue's worker held a valid client-side lock, every 5 ms."""
    while not stop.wait(0.005):
        worker = consumer.runners[0].workers.get(0) if consumer.runners else None
        if worker is not None:
            seen.append(worker.lock_valid())


def test_it_goes_on_with_every_key_after_its_client_side_lock_was_stale_for_a_moment(
    redis_client: redis.Redis, producer: Producer, consumer: Consumer
) -> None:
    create_topic(redis_client, TOPIC, 1)
    consumer.start()
    stop, lock_seen = threading.Event(), list[bool]()
    watcher = threading.Thread(target=_watch_lock, args=(consumer, stop, lock_seen))
    watcher.start()
    keys = [f"order-{k:02d}" for k in range(KEYS)]
    rounds = 0
    try:
        while rounds < PER_KEY or (False not in lock_seen and rounds < MAX_ROUNDS):
            for key in keys:
                producer.send(TOPIC, key, body(rounds))
            rounds += 1
            time.sleep(0.13)
        wait_until(
            lambda: fully_committed(redis_client, TOPIC, GROUP, 1),
            20,
            lambda: (
                f"the queue to be committed to its end; "
                f"{len(handled(redis_client))} of {KEYS * rounds} handled"
            ),
        )
    finally:
        stop.set()
        watcher.join(5)

    assert False in lock_seen, "the client-side lock never went stale: nothing was tested"
    assert order_violations(handled(redis_client), dict.fromkeys(keys, rounds)) == {}
    renewals = [
        e
        for e in events(redis_client)
        if e["type"] in {"lock_lost", "lock_renew_failed", "fencing_rejected"}
    ]
    assert renewals == [], "the broker lock was lost: the test no longer tests a stale moment"
    assert [e["token"] for e in events(redis_client, "lock_acquired")] == [1]
