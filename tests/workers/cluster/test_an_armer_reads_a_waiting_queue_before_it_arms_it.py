"""On a Redis Cluster a node's armer reads the streams of the queues that wait, all in one
pipeline of plain reads, before it arms any: a queue with entries there already is handed
them as its read would be, and no arm script runs for it (a script's read costs the node
several times the command's own); a queue with nothing new is armed, its flag set
(docs/reading.md, "On a Redis Cluster")."""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterator

import pytest
import redis

from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.hashing import queue_for_key
from lockstep.workers.ordering.cluster_pool import ClusterQueuePool
from lockstep.workers.ordering.runner import Handed, Wait
from lockstep.workers.refs import QueueRef
from tests.support import wait_until
from tests.workers.harness import body, servers

pytestmark = [pytest.mark.on_cluster(only=True)]

TOPIC, QUEUES, SENT = "armer-reads", 4, 3


def _key_of(queue: int) -> str:
    return next(f"key-{n}" for n in range(10_000) if queue_for_key(f"key-{n}", QUEUES) == queue)


class _Waiter:
    """Waits for its queue's entries from offset 0 until some are handed, then only for
    a poke (it waits for data no more, so nothing arms it again)."""

    inline_data_steps = False

    def __init__(self, queue: int) -> None:
        self.ref = QueueRef(TOPIC, queue)
        self.handed: list[bytes] = []
        self.got = threading.Event()
        self.stop = threading.Event()
        self.done = threading.Event()

    def steps(self) -> Generator[Wait, Handed, None]:
        handed: Handed = None
        while not handed:
            handed = yield Wait(None, data_from=0)
        self.handed = [entry_id for entry_id, _ in handed]
        self.got.set()
        while not self.stop.is_set():
            yield Wait(None)

    def stepped_out(self) -> None:
        self.done.set()


@pytest.fixture
def pool(redis_client: redis.Redis) -> Iterator[ClusterQueuePool]:
    pool = ClusterQueuePool(redis_client, 2, "armer-reads")
    yield pool
    pool.stop()


def _arm_calls(client: redis.Redis) -> int:
    """Script calls every master ran so far (the arms: nothing else runs one here)."""
    return sum(
        int(server.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))
        for server in servers(client)
    )


def _start(pool: ClusterQueuePool, waiters: list[_Waiter]) -> None:
    for waiter in waiters:
        pool.start(waiter)


def _stop(pool: ClusterQueuePool, waiters: list[_Waiter]) -> None:
    for waiter in waiters:
        waiter.stop.set()
        pool.poke(waiter)
    for waiter in waiters:
        waiter.done.wait(5)


def test_a_queue_with_entries_waiting_is_handed_them_without_an_arm(
    pool: ClusterQueuePool, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, TOPIC, QUEUES)
    producer = Producer(redis_url)
    try:
        sent = [producer.send(TOPIC, _key_of(1), body(n)) for n in range(SENT)]
    finally:
        producer.close()
    before = _arm_calls(redis_client)
    waiter = _Waiter(1)
    _start(pool, [waiter])
    try:
        wait_until(waiter.got.is_set, 10, "the waiting entries handed")
    finally:
        _stop(pool, [waiter])

    assert waiter.handed == [f"{r.offset}-1".encode() for r in sent]
    assert _arm_calls(redis_client) == before
    assert redis_client.get(keys.wake(waiter.ref)) is None


def test_a_queue_with_nothing_new_is_armed_and_woken_by_the_next_append(
    pool: ClusterQueuePool, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, TOPIC, QUEUES)
    waiter = _Waiter(2)
    _start(pool, [waiter])
    producer = Producer(redis_url)
    try:
        wait_until(
            lambda: redis_client.get(keys.wake(waiter.ref)) is not None, 10, "the queue armed"
        )
        sent = producer.send(TOPIC, _key_of(2), body(0))
        wait_until(waiter.got.is_set, 10, "the append handed through its wake-up")
    finally:
        producer.close()
        _stop(pool, [waiter])

    assert waiter.handed == [f"{sent.offset}-1".encode()]
