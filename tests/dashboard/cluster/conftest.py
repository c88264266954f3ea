"""The dashboard's tests over Redis (the JSON API, the pages, /metrics, dead letters and
their replays, alerts, the analytics writer) run again here with Lockstep's data on a
local Redis Cluster (3 masters, 3 replicas): ``redis_url`` is the cluster's
``redis+cluster://`` URL for every test of this package, and ``REDIS_URL`` in the
environment too (consumers and commands started by the tests read it). Celery's broker and
the channel layer stay on the suite's standalone redis-server (``dashboard_redis``, and
``CELERY_BROKER_URL``/``CHANNELS_REDIS_URL`` in the environment): neither speaks the
cluster protocol."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support import LocalCluster


@pytest.fixture(scope="package")
def redis_url(local_redis_cluster: LocalCluster, standalone_redis_url: str) -> Iterator[str]:
    local_redis_cluster.wait_healthy()
    environment = {
        "REDIS_URL": local_redis_cluster.url,
        # Child processes (consumers, manage.py commands) load the settings, which refuse
        # a cluster's REDIS_URL unless the broker and the channel layer are given apart.
        "CELERY_BROKER_URL": standalone_redis_url,
        "CHANNELS_REDIS_URL": standalone_redis_url,
    }
    before = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)
    yield local_redis_cluster.url
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
