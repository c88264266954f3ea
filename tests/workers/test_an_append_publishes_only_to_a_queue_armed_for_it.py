"""The wake-up of a waiting queue (docs/reading.md, "On a Redis Cluster"): ``arm_wakeup.lua``
returns what is already there or sets the queue's wake flag, for one queue or for many
queues of one node in one call; an append removes a set flag and publishes its
offset on the queue's shard channel, once; an append to a queue nobody armed publishes
nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.connection import node_client
from lockstep.workers.hashing import queue_for_key
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
    names = [keys.stream(REF), keys.wake(REF)]
    reply = script(client, "arm_wakeup")(keys=names, args=[64, 60_000, *names, after])
    return list(reply[0])


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


def test_one_call_arms_queues_of_several_slots_served_by_one_node(
    redis_client: redis.Redis, producer: Producer
) -> None:
    refs = _queues_on_one_node(redis_client, "several", 3)
    key = next(k for k in (f"k{n}" for n in range(10_000)) if queue_for_key(k, 64) == refs[1].queue)
    producer.send("several", key, b"a")
    node = node_client(redis_client, keys.stream(refs[0]))
    arm = script(redis_client, "arm_wakeup")
    node.script_load(arm.script)
    args = [part for ref in refs for part in (keys.stream(ref), keys.wake(ref), "0-0")]

    reply = node.evalsha(arm.sha, 0, 64, 60_000, *args)

    assert [[entry_id for entry_id, _ in found] for found in reply] == [[], [b"0-1"], []]
    assert [redis_client.exists(keys.wake(ref)) for ref in refs] == [1, 0, 1]


def _queues_on_one_node(client: redis.Redis, topic: str, count: int) -> list[QueueRef]:
    """``count`` queues of a new topic whose streams one node serves (on a cluster, of
    as many slots)."""
    create_topic(client, topic, 64)
    by_node: dict[Any, list[QueueRef]] = {}
    for queue in range(64):
        ref = QueueRef(topic, queue)
        by_node.setdefault(node_client(client, keys.stream(ref)), []).append(ref)
    most = max(by_node.values(), key=len)
    assert len(most) >= count
    return most[:count]
