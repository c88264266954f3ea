"""The runtime's tests run again here on a local Redis Cluster (3 masters, 3 replicas):
``redis_url`` is the cluster's ``redis+cluster://`` URL for every test of this package,
and ``REDIS_URL`` in the environment too (handlers and child processes read it)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support import LocalCluster


@pytest.fixture(scope="package")
def redis_url(local_redis_cluster: LocalCluster) -> Iterator[str]:
    local_redis_cluster.wait_healthy()
    before = os.environ.get("REDIS_URL")
    os.environ["REDIS_URL"] = local_redis_cluster.url
    yield local_redis_cluster.url
    if before is None:
        os.environ.pop("REDIS_URL", None)
    else:
        os.environ["REDIS_URL"] = before
