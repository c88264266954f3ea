"""A queue is never released in the middle of a message: whether it is handed over by a
rebalance or its consumer is stopped, the owner keeps the lock alive until the message in
progress is done, however long that takes, and only then does anyone else consume it."""

from __future__ import annotations

import pytest
import redis

from lockstep.workers import Producer, create_topic
from lockstep.workers.hashing import queue_for_key
from tests.support import wait_until
from tests.workers.conftest import SpawnConsumer
from tests.workers.handlers import SLOW_CLAIM
from tests.workers.harness import (
    FAST,
    body,
    events,
    fully_committed,
    handled,
    lock_owners,
    overlapping_handlings,
    registered,
)

pytestmark = pytest.mark.slow

TOPIC, GROUP = "orders", "fulfilment"
SLOW_S = FAST.lock_ttl_s * 2  # the handler outlives two lock ttls


def test_it_hands_a_queue_over_only_after_the_long_message_in_progress_is_done(
    redis_client: redis.Redis, producer: Producer, spawn_consumer: SpawnConsumer
) -> None:
    create_topic(redis_client, TOPIC, 2)
    key = next(k for k in (f"order-{i}" for i in range(100)) if queue_for_key(k, 2) == 0)
    holder = spawn_consumer(TOPIC, GROUP, "rl-b")  # sorts after the joiner: loses queue 0
    wait_until(
        lambda: len(lock_owners(redis_client, TOPIC, GROUP, 2)) == 2, 30, "rl-b to hold both queues"
    )
    producer.send(TOPIC, key, body(0, sleep_once=SLOW_S))
    for seq in range(1, 4):
        producer.send(TOPIC, key, body(seq))
    wait_until(lambda: redis_client.get(SLOW_CLAIM), 10, "rl-b to start the slow message")

    joiner = spawn_consumer(TOPIC, GROUP, "rl-a")
    wait_until(
        lambda: lock_owners(redis_client, TOPIC, GROUP, 2) == {0: "rl-a", 1: "rl-b"},
        SLOW_S + 10,
        "queue 0 to move to rl-a",
    )
    wait_until(lambda: fully_committed(redis_client, TOPIC, GROUP, 2), 10, "queue 0 to be consumed")
    assert holder.stop() == 0 and joiner.stop() == 0

    records = handled(redis_client)
    assert [(r["s"], r["c"]) for r in records] == [
        (0, "rl-b"),
        (1, "rl-a"),
        (2, "rl-a"),
        (3, "rl-a"),
    ]
    assert overlapping_handlings(records) == []
    assert events(redis_client, "fencing_rejected", "lock_margin_overrun") == []


def test_it_keeps_a_queue_locked_while_a_stopping_consumer_finishes_its_message(
    redis_client: redis.Redis, producer: Producer, spawn_consumer: SpawnConsumer
) -> None:
    create_topic(redis_client, TOPIC, 1)
    stopping = spawn_consumer(TOPIC, GROUP, "st-a")  # sorts first: owns the one queue
    wait_until(
        lambda: lock_owners(redis_client, TOPIC, GROUP, 1) == {0: "st-a"},
        30,
        "st-a to hold the queue",
    )
    standby = spawn_consumer(TOPIC, GROUP, "st-b")
    wait_until(
        lambda: registered(redis_client, GROUP, TOPIC) == {"st-a", "st-b"}, 30, "st-b to join"
    )
    producer.send(TOPIC, "order-1", body(0, sleep_once=SLOW_S))
    for seq in range(1, 4):
        producer.send(TOPIC, "order-1", body(seq))
    wait_until(lambda: redis_client.get(SLOW_CLAIM), 10, "st-a to start the slow message")

    assert stopping.stop() == 0, stopping.output()
    wait_until(
        lambda: fully_committed(redis_client, TOPIC, GROUP, 1), 15, "st-b to consume the rest"
    )
    assert standby.stop() == 0

    records = handled(redis_client)
    assert [(r["s"], r["c"]) for r in records] == [
        (0, "st-a"),
        (1, "st-b"),
        (2, "st-b"),
        (3, "st-b"),
    ]
    assert overlapping_handlings(records) == []
    assert events(redis_client, "fencing_rejected", "lock_margin_overrun") == []
