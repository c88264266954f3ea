from __future__ import annotations

import os
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import redis
from django.apps import apps as django_apps
from django.db.models.signals import post_migrate
from django.test import override_settings

from lockstep.workers.connection import connect
from tests.support import LocalCluster, redis_cluster, redis_server, refused_port

# Fixtures that start a Redis Cluster, a browser or a Spark session: a test using one is
# marked for it (and slow) without saying so itself.
CLUSTER_FIXTURES = frozenset({"local_redis_cluster"})
BROWSER_FIXTURES = frozenset({"browser", "chromium"})
SPARK_FIXTURES = frozenset({"spark"})
# A Spark test's limit, above the suite's 300 s: in fresh-clone runs beside three busy
# workers the slowest took 168-228 s, and one run went over 300 s. The timeout interrupts
# the py4j call in progress, which leaves the shared session's connection out of step:
# every later Spark test of the run then failed (KeyError in py4j's protocol). A hang is
# still caught.
SPARK_TIMEOUT_S = 900
# How the tests spread over pytest-xdist's workers: by module, slow ones first.
pytest_plugins = ["tests.scheduling"]
# Every JVM the suite starts (the local session, the analytics worker's, the standalone
# cluster's) reads its options from there: tests/spark-conf/spark-defaults.conf says why.
os.environ["SPARK_CONF_DIR"] = str(Path(__file__).resolve().parent / "spark-conf")
# The data migrations that make the roles (groups and their permissions).
ROLE_MIGRATIONS = (
    ("lockstep.dashboard.deadletters.migrations.0002_roles", "create_roles"),
    ("lockstep.dashboard.alerts.migrations.0002_roles", "grant"),
    ("lockstep.dashboard.reports.migrations.0003_run_analytics_permission", "grant"),
)


def make_roles(apps: Any) -> None:
    """Make the roles as the data migrations make them (idempotent)."""
    for module, function in ROLE_MIGRATIONS:
        getattr(import_module(module), function)(apps, None)


def _roles_after_a_flush(sender: Any, apps: Any = None, **kwargs: Any) -> None:
    """The flush that ends every transactional test removes the rows the data migrations
    made, and sends ``post_migrate`` as a ``migrate`` does: the roles are made again, so
    a test that runs after a transactional one on the same worker (pytest-xdist hands
    out modules in any order) finds the database as ``migrate`` left it."""
    if sender.name == "lockstep.dashboard.alerts":
        # A flush sends no ``apps`` (a migrate sends the migrated state's): the models.
        make_roles(apps or django_apps)


post_migrate.connect(_roles_after_a_flush, dispatch_uid="lockstep-tests-roles")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked ``on_cluster`` (itself or through its module's ``pytestmark``) runs
    once per backend: ``[standalone]``, and ``[cluster]`` with ``redis_url`` the local Redis
    Cluster's (see ``redis_url``); ``on_cluster(only=True)`` runs the cluster case alone.
    The parameter is function-scoped, so a fixture such a test uses that depends on
    ``redis_url`` must be function-scoped too; unmarked tests keep the session's value."""
    marker = metafunc.definition.get_closest_marker("on_cluster")
    if marker is None:
        return
    if marker.args or set(marker.kwargs) - {"only"}:
        raise ValueError(f"{metafunc.definition.nodeid}: on_cluster takes only `only=True`")
    backends = ["cluster"] if marker.kwargs.get("only") else ["standalone", "cluster"]
    metafunc.parametrize("redis_url", backends, indirect=True, scope="function")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Markers a test earns by what it uses (docs/testing.md, "Markers"): ``cluster`` (a local Redis
    Cluster: the ``[cluster]`` case of a test marked ``on_cluster`` or of one using
    ``redis_on_either``, a test using ``local_redis_cluster``, a module under a ``cluster``
    folder), ``browser`` (Chromium), ``spark`` (a Spark session, here or in a process it
    starts); each of them implies ``slow``, which modules may also declare themselves.
    ``make test-quick`` runs what is not slow."""
    for item in items:
        for name in _earned_markers(item):
            item.add_marker(name)
        if any(item.get_closest_marker(m) for m in ("cluster", "browser", "spark")):
            item.add_marker("slow")
        if item.get_closest_marker("spark") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SPARK_TIMEOUT_S))


def _earned_markers(item: pytest.Item) -> set[str]:
    fixtures = set(getattr(item, "fixturenames", ()))
    module = getattr(item, "module", None)
    # The node id's path is relative to the root directory: the folders a test lives in.
    parts = item.nodeid.split("::", 1)[0].split("/")[:-1]
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


@pytest.fixture(scope="session", autouse=True)
def quick_password_hashing() -> Iterator[None]:
    """Users made in the test process get MD5 password hashes: Django's PBKDF2 costs a
    quarter of a second of CPU a user, and hundreds of tests make one or log one in. The
    web side started as processes (tests/dashboard/stack.py) keeps the real hasher."""
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(scope="session")
def standalone_redis_url() -> Iterator[str]:
    """One real redis-server for the session, started by the suite on a free port. It is
    also the Celery broker and the channel layer in every test, which speak only to a
    standalone Redis (docs/cluster.md §6)."""
    with redis_server() as url:
        os.environ["REDIS_URL"] = url
        yield url


@pytest.fixture(scope="session")
def redis_url(request: pytest.FixtureRequest, standalone_redis_url: str) -> Iterator[str]:
    """The Redis holding Lockstep's data: the standalone server, except in the ``[cluster]``
    case of a test marked ``on_cluster`` (``pytest_generate_tests``), where it is the local
    Redis Cluster's ``redis+cluster://`` URL, and ``REDIS_URL`` in the environment too
    (handlers, consumers and commands the test starts read it) until the test ends. Celery's
    broker and the channel layer stay on the standalone server (``dashboard_redis``, and
    ``CELERY_BROKER_URL``/``CHANNELS_REDIS_URL`` in the environment): neither speaks the
    cluster protocol."""
    if getattr(request, "param", "standalone") == "standalone":
        yield standalone_redis_url
        return
    cluster: LocalCluster = request.getfixturevalue("local_redis_cluster")
    cluster.wait_healthy()
    environment = {
        "REDIS_URL": cluster.url,
        # Child processes (consumers, manage.py commands) load the settings, which refuse
        # a cluster's REDIS_URL unless the broker and the channel layer are given apart.
        "CELERY_BROKER_URL": standalone_redis_url,
        "CHANNELS_REDIS_URL": standalone_redis_url,
    }
    before = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)
    try:
        yield cluster.url
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture
def dead_redis_url() -> Iterator[str]:
    """A Redis URL where connections are refused for the whole test (its port held bound,
    never listened on)."""
    with refused_port() as port:
        yield f"redis://127.0.0.1:{port}/0"


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
    from tests.dashboard.helpers import point_celery_at

    point_celery_at(standalone_redis_url)
    yield
    from lockstep.dashboard.celery import app

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
