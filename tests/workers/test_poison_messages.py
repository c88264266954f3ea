"""A message its handler always fails: dead-lettered after max_reconsume_times retries, or,
with RocketMQ's unbounded default, retried forever while its queue piles up behind it."""

from __future__ import annotations

import json

import pytest
import redis

from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.broker import Broker
from lockstep.workers.refs import QueueRef
from tests.support import wait_until
from tests.workers.conftest import StartConsumer
from tests.workers.handlers import CALLS
from tests.workers.harness import body, events, fully_committed, handled, stream_entries

TOPIC, GROUP = "orders", "billing"


SENT = 10


def _send_around_poison(producer: Producer) -> tuple[int, int]:
    """order-1: seq 0, the poison message (seq 1), seq 2..4; then order-2: seq 0..4, all on
    the topic's one queue. Returns (queue, poison offset)."""
    producer.send(TOPIC, "order-1", body(0))
    poison = producer.send(TOPIC, "order-1", body(1, poison=True))
    for s in (2, 3, 4):
        producer.send(TOPIC, "order-1", body(s))
    for s in range(5):
        producer.send(TOPIC, "order-2", body(s))
    return poison.queue, poison.offset


@pytest.mark.on_cluster
def test_it_dead_letters_a_poison_message_after_exactly_max_reconsume_retries(
    redis_client: redis.Redis, producer: Producer, start_consumer: StartConsumer
) -> None:
    create_topic(redis_client, TOPIC, 1)  # one queue: order-2 waits behind order-1 too
    queue, poison = _send_around_poison(producer)

    start_consumer(TOPIC, GROUP, "poison-bounded", max_reconsume_times=3, suspend_ms=50)
    wait_until(
        lambda: fully_committed(redis_client, TOPIC, GROUP, 1),
        20,
        "the queue to move past the poison message",
    )

    assert int(redis_client.hget(CALLS, f"{queue}:{poison}") or 0) == 4  # 1 call + 3 retries
    dlq = stream_entries(redis_client, keys.dead_letters(QueueRef(TOPIC, queue), GROUP))
    assert len(dlq) == 1
    entry = dlq[0][1]
    assert int(entry[b"offset"]) == poison
    assert int(entry[b"reconsume_times"]) == 3
    assert json.loads(entry[b"body"]) == {"seq": 1, "poison": True}
    assert entry[b"error"] == b"handler returned SUSPEND_CURRENT_QUEUE_A_MOMENT"
    handled_order = [(r["k"], r["s"]) for r in handled(redis_client)]
    assert [s for k, s in handled_order if k == "order-1"] == [0, 2, 3, 4]
    assert [s for k, s in handled_order if k == "order-2"] == [0, 1, 2, 3, 4]
    assert Broker(redis_client).read_offset(QueueRef(TOPIC, queue), GROUP).committed == SENT
    wait_until(lambda: events(redis_client, "dead_lettered"), 5, "the dead_lettered event")
    (dead,) = events(redis_client, "dead_lettered")
    assert dead["details"]["offset"] == poison and dead["key"] == "order-1"
    retries = [e["details"]["reconsume_times"] for e in events(redis_client, "consume_failed")]
    assert retries == [1, 2, 3]


def test_it_blocks_the_queue_behind_a_poison_message_when_retries_are_unbounded(
    redis_client: redis.Redis, producer: Producer, start_consumer: StartConsumer
) -> None:
    create_topic(redis_client, TOPIC, 1)
    queue, poison = _send_around_poison(producer)

    start_consumer(TOPIC, GROUP, "poison-unbounded", suspend_ms=50)  # default: unbounded
    calls_at = lambda: int(redis_client.hget(CALLS, f"{queue}:{poison}") or 0)  # noqa: E731
    wait_until(lambda: calls_at() >= 5, 20, "the poison message to be retried")
    first = calls_at()
    # Five more retries (50 ms apart) while the messages behind it must stay unhandled.
    wait_until(lambda: calls_at() >= first + 5, 20, "five more retries of the poison message")
    later = calls_at()

    assert later >= first + 5, f"retries stopped growing: {first} -> {later}"
    assert [(r["k"], r["s"]) for r in handled(redis_client)] == [("order-1", 0)]
    assert redis_client.xlen(keys.dead_letters(QueueRef(TOPIC, queue), GROUP)) == 0
    assert Broker(redis_client).read_offset(QueueRef(TOPIC, queue), GROUP).committed == poison
    wait_until(lambda: len(events(redis_client, "consume_failed")) >= 5, 5, "consume_failed events")
    retries = [e["details"]["reconsume_times"] for e in events(redis_client, "consume_failed")]
    assert retries == list(range(1, len(retries) + 1))
    assert all(
        e["details"]["max_reconsume_times"] == -1 for e in events(redis_client, "consume_failed")
    )
