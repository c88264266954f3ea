"""On a Redis Cluster without sharded pub/sub (Redis 6), a consumer reads each queue on a
thread of its own, blocking in ``XREAD`` on a client of their own: the shared, bounded
connections stay free for renewals and commits (docs/reading.md, "The runners")."""

from __future__ import annotations

import threading

import pytest
import redis

from lockstep.workers import Producer, create_topic
from lockstep.workers import consumer as consumer_module
from lockstep.workers.hashing import queue_for_key
from lockstep.workers.outage import connection_name
from tests.support import wait_until
from tests.workers.harness import (
    body,
    handled,
    named_connections,
    recording_consumer,
    servers,
)

pytestmark = [pytest.mark.slow, pytest.mark.on_cluster(only=True)]

TOPIC, GROUP, QUEUES = "redis6", "ledger", 24
SHARED = 2  # LOCKSTEP_REDIS_CONNECTIONS: far fewer than the queues blocking in reads
CONSUMER = "redis6-consumer"


def _named(client: redis.Redis, name: str) -> list[int]:
    """Connections named ``name`` on each master."""
    return [named_connections(server, name) for server in servers(client)]


def test_each_queue_reads_on_its_own_thread_and_every_message_is_handled(
    redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(consumer_module, "has_sharded_pubsub", lambda _client: False)
    monkeypatch.setenv("LOCKSTEP_REDIS_CONNECTIONS", str(SHARED))
    create_topic(redis_client, TOPIC, QUEUES)
    keys_by_queue = {queue_for_key(f"k{n}", QUEUES): f"k{n}" for n in range(2_000)}
    consumer = recording_consumer(redis_url, TOPIC, GROUP, CONSUMER)
    consumer.start()
    producer = Producer(redis_url)
    try:
        wait_until(
            lambda: (
                sum(t.name.startswith(f"lockstep-{TOPIC}-") for t in threading.enumerate())
                == QUEUES
            ),
            30,
            "a reading thread per queue",
        )
        for seq in range(3):
            for q in range(QUEUES):
                producer.send(TOPIC, keys_by_queue[q], body(seq))
        wait_until(lambda: len(handled(redis_client)) >= 3 * QUEUES, 30, "every message")
        # The reads block on connections of their own; the shared ones stay bounded.
        assert sum(_named(redis_client, connection_name(f"{CONSUMER}/reads"))) >= QUEUES
        assert max(_named(redis_client, connection_name(CONSUMER))) <= SHARED
    finally:
        producer.close()
        consumer.stop()

    by_queue: dict[int, list[int]] = {}
    for record in handled(redis_client):
        by_queue.setdefault(record["q"], []).append(record["s"])
    assert by_queue == {q: [0, 1, 2] for q in range(QUEUES)}
