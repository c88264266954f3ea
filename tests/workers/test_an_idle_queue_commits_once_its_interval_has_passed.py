"""Under queue ordering, a queue that goes idle writes its handled position once
``commit_interval_ms`` has passed since its last commit, not at every wait: a queue woken
many times within one interval, a few messages each, commits once for all of them, and
the last position still lands without any further message (docs/semantics.md §3)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import pytest
import redis

from lockstep import Consumer, Producer, Subscription, create_topic
from lockstep.workers import keys
from lockstep.workers.refs import QueueRef
from tests.support import wait_until
from tests.workers.harness import FAST, RECORD_HANDLER, body, handled_count, stored_offset

TOPIC, GROUP = "invoices", "archive"
# Long against the test's wake-ups (each a few milliseconds apart), short for a test.
INTERVAL_MS = 1500
WAKEUPS = 6


@pytest.fixture
def offset_writes(redis_client: redis.Redis) -> Iterator[redis.client.PubSub]:
    """A subscription to the keyspace notifications of the queue's offset hash: one
    message per write of it."""
    redis_client.config_set("notify-keyspace-events", "Kh")
    pubsub = redis_client.pubsub()
    pubsub.subscribe(f"__keyspace@0__:{keys.offset(QueueRef(TOPIC, 0), GROUP)}")
    try:
        yield pubsub
    finally:
        pubsub.close()
        redis_client.config_set("notify-keyspace-events", "")


def _writes(pubsub: redis.client.PubSub) -> int:
    """The writes notified so far (the notifications are all in by the time the last
    write was seen: they are sent as each write runs)."""
    count = 0
    while (message := pubsub.get_message(timeout=0.05)) is not None:
        count += message["type"] == "message" and message["data"] == b"hset"
    return count


def _handled(client: redis.Redis, count: int) -> bool:
    return handled_count(client) >= count


def test_a_queue_woken_many_times_within_its_interval_commits_once_for_all_of_them(
    redis_client: redis.Redis,
    redis_url: str,
    producer: Producer,
    offset_writes: redis.client.PubSub,
) -> None:
    create_topic(redis_url, TOPIC, 1)
    sub = Subscription(TOPIC, GROUP, handler=RECORD_HANDLER, commit_interval_ms=INTERVAL_MS)
    consumer = Consumer(redis_url, [sub], timings=FAST, consumer_id="idle-commits")
    consumer.start()
    try:
        for n in range(1, WAKEUPS + 1):
            producer.send(TOPIC, "acct-1", body(n))  # each sent once the last was handled
            wait_until(partial(_handled, redis_client, n), 15, f"message {n}")

        wait_until(
            lambda: stored_offset(redis_client, TOPIC, GROUP, 0)[0] == WAKEUPS,
            15,
            "the last position to be committed with no further message",
        )
        writes = _writes(offset_writes)
    finally:
        consumer.stop()

    # The first message commits at once (no commit yet); the other wake-ups share the
    # interval's one commit. A slow machine may cross one interval boundary more.
    assert 1 < writes <= 3 < WAKEUPS
