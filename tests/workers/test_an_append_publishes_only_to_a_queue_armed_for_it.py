"""The wake-up of a waiting queue (docs/reading.md, "On a Redis Cluster"): ``arm_wakeup.lua``
returns what is already there or sets the queue's wake flag; an append removes a set flag
and publishes its offset on the queue's shard channel, once; an append to a queue nobody
armed publishes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.refs import QueueRef
from lockstep.workers.scripts import script
from tests.support import wait_until

pytestmark = pytest.mark.on_cluster

TOPIC = "armed"
REF = QueueRef(TOPIC, 0)


@pytest.fixture
def producer(redis_client: redis.Redis, redis_url: str) -> Iterator[Producer]:
    create_topic(redis_client, TOPIC, 1)
    producer = Producer(redis_url)
    yield producer
    producer.close()


@pytest.fixture
def channel(redis_client: redis.Redis) -> Iterator[Any]:
    """A subscription to the queue's shard channel, confirmed."""
    pubsub = redis_client.pubsub()
    pubsub.ssubscribe(keys.wake(REF))
    first = wait_until(lambda: pubsub.get_sharded_message(timeout=1.0), 10, "the confirmation")
    assert first["type"] == "ssubscribe"
    yield pubsub
    pubsub.close()


def _arm(client: redis.Redis, after: str) -> list[Any]:
    return list(
        script(client, "arm_wakeup")(
            keys=[keys.stream(REF), keys.wake(REF)], args=[after, 64, 60_000]
        )
    )


def _next_message(pubsub: Any) -> Any:
    return wait_until(lambda: pubsub.get_sharded_message(timeout=1.0), 10, "a published offset")


def test_an_append_removes_the_flag_and_publishes_its_offset_once(
    redis_client: redis.Redis, producer: Producer, channel: Any
) -> None:
    assert _arm(redis_client, "0-0") == []
    assert redis_client.pttl(keys.wake(REF)) > 0

    producer.send(TOPIC, "k", b"first")  # offset 0: armed, publishes
    producer.send(TOPIC, "k", b"second")  # offset 1: the flag is gone, publishes nothing
    assert redis_client.exists(keys.wake(REF)) == 0
    assert _arm(redis_client, "1-1") == []
    producer.send(TOPIC, "k", b"third")  # offset 2: armed again, publishes

    published = [_next_message(channel)["data"], _next_message(channel)["data"]]
    assert published == [b"0", b"2"]


def test_an_arm_returns_the_entries_already_there_and_sets_no_flag(
    redis_client: redis.Redis, producer: Producer
) -> None:
    for text in ("a", "b", "c"):
        producer.send(TOPIC, "k", text.encode())

    found = _arm(redis_client, "0-1")  # waiting for offset 1

    assert [entry_id for entry_id, _ in found] == [b"1-1", b"2-1"]
    assert redis_client.exists(keys.wake(REF)) == 0
