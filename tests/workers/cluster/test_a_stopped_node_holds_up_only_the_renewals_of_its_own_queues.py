"""Renewals per node (docs/cluster.md): one consumer owns every queue of a topic spread over
the three masters of a cluster, and one master is frozen (SIGSTOP) for longer than the
consumer's client-side lock lasts. The node timeout is long, so the cluster does not fail
over and the frozen master simply does not answer. The renewals of the queues on the other
masters go on past the moment their locks would have gone stale, while the frozen
master's queues are not renewed."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import pytest
import redis

from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.connection import cluster_of
from lockstep.workers.hashing import queue_for_key
from lockstep.workers.ordering import QueueWorker
from lockstep.workers.refs import QueueRef
from tests.support import LocalCluster, redis_cluster, wait_until
from tests.workers.handlers import HANDLED
from tests.workers.harness import FAST, body, handled, recording_consumer

pytestmark = [pytest.mark.slow, pytest.mark.cluster]

TOPIC, GROUP, QUEUES = "orders", "ledger", 12


@pytest.fixture
def private_cluster() -> Iterator[LocalCluster]:
    # No replicas, and a node timeout far past the freeze: no failover, no CLUSTERDOWN.
    with redis_cluster(masters=3, replicas=0, node_timeout_ms=60_000) as cluster:
        yield cluster


@pytest.fixture
def redis_url(private_cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> str:
    """This test's own cluster for everything (handlers read ``REDIS_URL`` too)."""
    monkeypatch.setenv("REDIS_URL", private_cluster.url)
    return private_cluster.url


def _port_of(client: redis.Redis, key: str) -> int:
    cluster = cluster_of(client)
    assert cluster is not None
    return int(cluster.get_node_from_key(key).port)


def _queue_ports(client: redis.Redis) -> dict[int, int]:
    return {q: _port_of(client, keys.stream(QueueRef(TOPIC, q))) for q in range(QUEUES)}


def _frozen_port(client: redis.Redis, consumer_id: str) -> int:
    """A master serving queues of the topic, but none of the keys the consumer's control
    loop or the recording handler write (the group's registry, the consumer's card, the
    handled list): only its queues' own calls meet the freeze."""
    busy = {
        _port_of(client, keys.registry(TOPIC, GROUP)),
        _port_of(client, keys.consumer_info(consumer_id)),
        _port_of(client, keys.CONSUMERS),
        _port_of(client, HANDLED),
    }
    candidates = sorted(set(_queue_ports(client).values()) - busy)
    if not candidates:
        pytest.fail(f"every master serves a control key: {busy}")
    return candidates[0]


def _handled(client: redis.Redis, queues: set[int], seq: int) -> set[int]:
    """The queues among ``queues`` with a handled message of body ``seq``."""
    return {h["q"] for h in handled(client) if h["q"] in queues and h["s"] == seq}


def _renewed_since(worker: QueueWorker | None, moment: float) -> bool:
    return worker is not None and worker.last_locked > moment


def _key_of(queue: int) -> str:
    """A key that the producer sends to ``queue``."""
    return next(f"key-{n}" for n in range(10_000) if queue_for_key(f"key-{n}", QUEUES) == queue)


def test_the_other_nodes_queues_are_renewed_and_consumed_while_one_master_is_frozen(
    private_cluster: LocalCluster, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, TOPIC, QUEUES)
    consumer = recording_consumer(redis_url, TOPIC, GROUP)
    producer = Producer(redis_url)
    frozen_port = _frozen_port(redis_client, "c1")
    ports = _queue_ports(redis_client)
    frozen = {q for q, port in ports.items() if port == frozen_port}
    healthy = set(range(QUEUES)) - frozen
    consumer.start()
    try:
        runner = consumer.runners[0]
        wait_until(lambda: sorted(runner.workers) == list(range(QUEUES)), 30, "all 12 queues")
        # A message handled on every queue: every worker is consuming before the freeze.
        for q in range(QUEUES):
            producer.send(TOPIC, _key_of(q), body(0))
        wait_until(
            lambda: len(_handled(redis_client, set(range(QUEUES)), 0)) == QUEUES, 30, "first"
        )
        node = private_cluster.node(frozen_port).proc
        node.send_signal(signal.SIGSTOP)
        stopped_at = time.monotonic()
        try:
            # Past the point where an unrenewed client-side lock goes stale.
            stale_at = stopped_at + FAST.client_lock_expiry_s + FAST.lock_renew_interval_s
            wait_until(
                lambda: all(_renewed_since(runner.workers.get(q), stale_at) for q in healthy),
                30,
                "renewals of the other masters' queues after the freeze",
            )
            workers = dict(runner.workers)
            renewed_on_frozen = [
                q for q in frozen if q in workers and workers[q].last_locked > stopped_at
            ]
        finally:
            node.send_signal(signal.SIGCONT)
        assert renewed_on_frozen == []
    finally:
        consumer.stop()
        producer.close()
