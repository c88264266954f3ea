"""The cluster case of a test marked ``on_cluster`` really runs on the cluster: the
dashboard's Redis client (built from ``settings.REDIS_URL``) is a cluster client, and what
a topic writes lands on more than one master, so a command over keys in several slots
would be refused there; Celery's broker and the channel layer stay on the standalone
server."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.workers import create_topic
from lockstep.workers.connection import cluster_of, is_cluster

pytestmark = pytest.mark.on_cluster(only=True)


def test_the_dashboard_reads_lockstep_data_from_the_cluster(
    redis_client: redis.Redis, standalone_redis_url: str, settings: Any
) -> None:
    assert is_cluster(settings.REDIS_URL)
    cluster = cluster_of(get_redis())
    assert cluster is not None
    create_topic(redis_client, "orders", 16)
    holding = [node for node in cluster.get_primaries() if cluster.dbsize(target_nodes=node)]
    assert len(holding) > 1
    # Celery's broker and the channel layer stay on the standalone server.
    broker: str = settings.CELERY_BROKER_URL
    assert broker == standalone_redis_url
    hosts = settings.CHANNEL_LAYERS["default"]["CONFIG"]["hosts"]
    assert [host["address"] for host in hosts] == [standalone_redis_url]
