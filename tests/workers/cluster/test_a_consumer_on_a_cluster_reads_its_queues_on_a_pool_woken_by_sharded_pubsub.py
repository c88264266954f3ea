"""On a Redis Cluster a consumer steps its queues on a bounded pool, as on a standalone
Redis, and a queue waiting for data is woken by the append itself (docs/reading.md, "On a
Redis Cluster"): the queue armed its wake flag, the produce script removed it and
published on the queue's shard channel, the node's listener woke the queue. An armed
queue otherwise reads again only after ``REARM_S``, so a message handled well before that
came through the wake-up; so did one sent after the listeners' connections were cut."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from lockstep.workers import Consumer, Producer, create_topic, keys
from lockstep.workers.connection import cluster_of, get_each
from lockstep.workers.hashing import queue_for_key
from lockstep.workers.ordering.cluster_pool import REARM_S
from lockstep.workers.refs import QueueRef
from lockstep.workers.scripts import script
from tests.support import wait_until
from tests.workers.harness import body, handled, recording_consumer

pytestmark = [pytest.mark.slow, pytest.mark.on_cluster(only=True)]

TOPIC, GROUP, QUEUES = "wakeups", "ledger", 48
# Far below REARM_S: what is handled this soon was woken, not re-read on a timer.
WOKEN_WITHIN_S = 8.0


def _key_of(queue: int) -> str:
    return next(f"key-{n}" for n in range(10_000) if queue_for_key(f"key-{n}", QUEUES) == queue)


def _armed(client: redis.Redis, queues: range) -> bool:
    flags = get_each(client, [keys.wake(QueueRef(TOPIC, q)) for q in queues])
    return all(flag is not None for flag in flags)


def _handled_at(client: redis.Redis, seq: int) -> set[int]:
    return {h["q"] for h in handled(client) if h["s"] == seq}


def _thread_names() -> list[str]:
    return [thread.name for thread in threading.enumerate()]


@pytest.fixture
def consumer(redis_client: redis.Redis, redis_url: str) -> Iterator[Consumer]:
    create_topic(redis_client, TOPIC, QUEUES)
    consumer = recording_consumer(redis_url, TOPIC, GROUP)
    consumer.start()
    try:
        runner = consumer.runners[0]
        wait_until(lambda: len(runner.workers) == QUEUES, 30, "every queue owned")
        yield consumer
    finally:
        consumer.stop()


def _send_one_to_each(producer: Producer, seq: int) -> float:
    for q in range(QUEUES):
        producer.send(TOPIC, _key_of(q), body(seq))
    return time.monotonic()


def test_it_runs_a_bounded_pool_and_an_append_wakes_an_armed_queue(
    consumer: Consumer, redis_client: redis.Redis, redis_url: str
) -> None:
    masters = len({n.name for n in cluster_of(redis_client).get_primaries()})  # type: ignore[union-attr]
    wait_until(lambda: _armed(redis_client, range(QUEUES)), 30, "every idle queue armed")
    producer = Producer(redis_url)
    try:
        sent_at = _send_one_to_each(producer, 1)
        wait_until(
            lambda: _handled_at(redis_client, 1) == set(range(QUEUES)),
            WOKEN_WITHIN_S,
            "each queue's message, through its wake-up",
        )
        assert time.monotonic() - sent_at < REARM_S
    finally:
        producer.close()

    names = _thread_names()
    pool = [name for name in names if name.startswith(f"lockstep-{GROUP}-{TOPIC}-")]
    per_node = [name for name in pool if "-listen-" in name or "-arm-" in name]
    assert 1 <= len(pool) - len(per_node) <= 16, pool  # the stepping threads
    assert len(per_node) <= 2 * masters, pool  # a listener and an armer a node
    assert [name for name in names if name.startswith(f"lockstep-{TOPIC}-")] == []  # per queue


def test_queues_are_woken_after_the_listeners_connections_are_cut(
    consumer: Consumer, redis_client: redis.Redis, redis_url: str
) -> None:
    cluster = cluster_of(redis_client)
    assert cluster is not None
    wait_until(lambda: _armed(redis_client, range(QUEUES)), 30, "every idle queue armed")
    # Flags gone and subscriptions cut: only queues that learn of the cut and wait again
    # (armed anew, on subscriptions confirmed anew) are woken by the next append.
    for q in range(QUEUES):
        redis_client.delete(keys.wake(QueueRef(TOPIC, q)))
    for node in cluster.get_primaries():
        cluster.get_redis_connection(node).client_kill_filter(_type="pubsub")
    wait_until(lambda: _armed(redis_client, range(QUEUES)), 30, "every queue armed again")
    producer = Producer(redis_url)
    try:
        _send_one_to_each(producer, 2)
        wait_until(
            lambda: _handled_at(redis_client, 2) == set(range(QUEUES)),
            WOKEN_WITHIN_S,
            "each queue's message after the cut",
        )
    finally:
        producer.close()


def test_queues_whose_node_refuses_their_arms_together_are_armed_one_by_one(
    consumer: Consumer,
    redis_client: redis.Redis,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    arm = script(redis_client, "arm_wakeup").sha
    refused: list[int] = []
    evalsha = redis.Redis.evalsha

    def refusing(client: redis.Redis, sha: str, numkeys: int, *args: Any) -> Any:
        # A call for many queues declares no keys; a node refuses it once one of the
        # slots it names moved away.
        if sha == arm and numkeys == 0:
            refused.append(1)
            raise redis.ResponseError("Script attempted to access a non local key")
        return evalsha(client, sha, numkeys, *args)

    monkeypatch.setattr(redis.Redis, "evalsha", refusing)
    wait_until(lambda: _armed(redis_client, range(QUEUES)), 30, "every idle queue armed")
    producer = Producer(redis_url)
    try:
        # 3 wakes the queues armed before; each is armed again one by one, and only an
        # arm that set its flag lets 4 wake it (else it reads again after REARM_S).
        for seq in (3, 4):
            _send_one_to_each(producer, seq)
            wait_until(
                lambda s=seq: _handled_at(redis_client, s) == set(range(QUEUES)),  # type: ignore[misc]
                WOKEN_WITHIN_S,
                f"each queue's message {seq}",
            )
    finally:
        producer.close()
    assert refused
