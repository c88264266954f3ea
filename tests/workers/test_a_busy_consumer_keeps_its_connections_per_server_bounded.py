"""A consumer process keeps at most ``LOCKSTEP_REDIS_CONNECTIONS`` connections to a
standalone Redis, or to each node of a Redis Cluster, shared by all its threads, plus
one of its own for the pool's reader (standalone) or for the node's sharded
subscriptions (cluster) — however many of its queues are busy at once
(docs/reading.md, "Connections"). Its connections carry its name."""

from __future__ import annotations

import threading

import pytest
import redis

from lockstep.workers import Producer, create_topic
from lockstep.workers.hashing import queue_for_key
from lockstep.workers.outage import connection_name
from tests.support import wait_until
from tests.workers.harness import (
    body,
    handled_count,
    named_connections,
    recording_consumer,
    servers,
)

pytestmark = [pytest.mark.slow, pytest.mark.on_cluster]

# Enough queues and messages that the 16 stepping threads keep going to Redis at once:
# with unbounded pools the consumer opened 10 connections to a standalone Redis and up to
# 8 to a node (measured).
TOPIC, GROUP, QUEUES, PER_QUEUE = "bounded", "ledger", 64, 40
SHARED = 3  # LOCKSTEP_REDIS_CONNECTIONS here
OWN = 1  # the reader's, or the listener's of the one subscription on each node
CONSUMER = "bounded-consumer"


class _Sampler(threading.Thread):
    """The most connections named ``name`` each server had while it ran."""

    def __init__(self, servers: list[redis.Redis], name: str) -> None:
        super().__init__(daemon=True)
        self.servers, self.name = servers, name
        self.most = [0] * len(servers)
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for i, server in enumerate(self.servers):
                self.most[i] = max(self.most[i], named_connections(server, self.name))
            self.done.wait(0.005)


def _fill(client: redis.Redis, url: str) -> None:
    create_topic(client, TOPIC, QUEUES)
    keys_by_queue = {queue_for_key(f"k{n}", QUEUES): f"k{n}" for n in range(2_000)}
    producer = Producer(url)
    try:
        for seq in range(PER_QUEUE):
            for q in range(QUEUES):
                producer.send(TOPIC, keys_by_queue[q], body(seq))
    finally:
        producer.close()


def test_its_threads_share_a_bounded_set_of_connections_to_each_server(
    redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(redis_client, redis_url)
    monkeypatch.setenv("LOCKSTEP_REDIS_CONNECTIONS", str(SHARED))
    sampler = _Sampler(servers(redis_client), connection_name(CONSUMER))
    consumer = recording_consumer(redis_url, TOPIC, GROUP, CONSUMER)
    sampler.start()
    consumer.start()
    try:
        wait_until(
            lambda: handled_count(redis_client) >= QUEUES * PER_QUEUE, 60, "the backlog handled"
        )
    finally:
        sampler.done.set()
        sampler.join()
        consumer.stop()

    assert min(sampler.most) > 0  # every server served the consumer, under its name
    assert max(sampler.most) <= SHARED + OWN, sampler.most
