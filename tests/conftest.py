from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import redis

from lockstep.workers.connection import connect
from tests.support import LocalCluster, redis_cluster, redis_server

TESTS = Path(__file__).resolve().parent
# Fixtures that start a Redis Cluster, a browser or a Spark session: a test using one is
# marked for it (and slow) without saying so itself.
CLUSTER_FIXTURES = frozenset({"local_redis_cluster"})
BROWSER_FIXTURES = frozenset({"browser", "chromium"})
SPARK_FIXTURES = frozenset({"spark"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Markers a test earns by what it uses (README, "Tests"): ``cluster`` (a local Redis
    Cluster: the cluster packages, or ``redis_on_either``'s cluster case), ``browser``
    (Chromium), ``spark`` (a Spark session, here or in a process it starts); each of them
    implies ``slow``, which modules may also declare themselves. ``make test-quick`` runs
    what is not slow."""
    for item in items:
        for name in _earned_markers(item):
            item.add_marker(name)
        if any(item.get_closest_marker(m) for m in ("cluster", "browser", "spark")):
            item.add_marker("slow")


def _earned_markers(item: pytest.Item) -> set[str]:
    fixtures = set(getattr(item, "fixturenames", ()))
    module = getattr(item, "module", None)
    parts = item.path.resolve().relative_to(TESTS).parts
    earned = set()
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "cluster" in parts or fixtures & CLUSTER_FIXTURES or "cluster" in params.values():
        earned.add("cluster")
    if fixtures & BROWSER_FIXTURES or _uses(module, "playwright"):
        earned.add("browser")
    if fixtures & SPARK_FIXTURES or _uses(module, "pyspark"):
        earned.add("spark")
    return earned


def _uses(module: ModuleType | None, package: str) -> bool:
    """Whether ``module`` holds a name imported from ``package`` (a class, a function or
    the module itself)."""
    if module is None:
        return False
    for value in vars(module).values():
        origin = getattr(value, "__module__", None) or getattr(value, "__name__", "")
        if isinstance(origin, str) and origin.split(".")[0] == package:
            return True
    return False


@pytest.fixture(scope="session")
def standalone_redis_url() -> Iterator[str]:
    """One real redis-server for the session, started by the suite on a free port. It is
    also the Celery broker and the channel layer in every test, which speak only to a
    standalone Redis (README, "Running on Redis Cluster")."""
    with redis_server() as url:
        os.environ["REDIS_URL"] = url
        yield url


@pytest.fixture(scope="session")
def redis_url(standalone_redis_url: str) -> str:
    """The Redis holding Lockstep's data: the standalone server here; the packages
    ``tests/*/cluster`` override it with a local Redis Cluster's URL."""
    return standalone_redis_url


@pytest.fixture(scope="session")
def local_redis_cluster() -> Iterator[LocalCluster]:
    """A local Redis Cluster (3 masters, 3 replicas), started the first time a test asks
    for it and stopped at the end of the session."""
    with redis_cluster(masters=3, replicas=1) as cluster:
        yield cluster


@pytest.fixture(params=["standalone", "cluster"])
def redis_on_either(request: pytest.FixtureRequest, redis_url: str) -> Iterator[redis.Redis]:
    """A flushed client, once on the standalone server and once on the local Redis
    Cluster: for tests of one behaviour that differs in how it reaches the two."""
    url = redis_url
    if request.param == "cluster":
        cluster: LocalCluster = request.getfixturevalue("local_redis_cluster")
        cluster.wait_healthy()
        url = cluster.url
    client = connect(url)
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client on a flushed database: every test starts from an empty Redis (on a
    cluster, every master is flushed)."""
    client = connect(redis_url)
    client.flushall()
    yield client
    client.close()


@pytest.fixture(scope="session", autouse=True)
def celery_broker_on_suite_redis(standalone_redis_url: str) -> Iterator[None]:
    """Celery's broker on the suite's redis-server for the whole session (no worker
    listens there unless a test starts one): a task queued by the web side never reaches
    a Redis the suite did not start."""
    from lockstep.dashboard.celery import app

    app.close()
    app.conf.update(broker_url=standalone_redis_url)
    yield
    app.close()


@pytest.fixture(autouse=True)
def dashboard_redis(redis_url: str, standalone_redis_url: str, settings: Any) -> Iterator[str]:
    """Point the web side (Redis client and channel layer) at the suite's redis-server,
    for every test: no test may reach a Redis the suite did not start. The channel layer
    stays on the standalone server also when Lockstep's data is on a cluster."""
    settings.REDIS_URL = redis_url
    settings.CELERY_BROKER_URL = standalone_redis_url
    # The configured host's connection options (read timeout, keepalive) stay: only the
    # address changes.
    (host,) = settings.CHANNEL_LAYERS["default"]["CONFIG"]["hosts"]
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [{**host, "address": standalone_redis_url}],
                "capacity": 1000,
                "expiry": 30,
            },
        }
    }
    yield redis_url
