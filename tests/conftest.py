from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.support import redis_server


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """One real redis-server for the session, started by the suite on a free port."""
    with redis_server() as url:
        os.environ["REDIS_URL"] = url
        yield url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client on a flushed database: every test starts from an empty Redis."""
    client = redis.Redis.from_url(redis_url)
    client.flushall()
    yield client
    client.close()


@pytest.fixture(scope="session", autouse=True)
def celery_broker_on_suite_redis(redis_url: str) -> Iterator[None]:
    """Celery's broker on the suite's redis-server for the whole session (no worker
    listens there unless a test starts one): a task queued by the web side never reaches
    a Redis the suite did not start."""
    from dashboard.celery import app

    app.close()
    app.conf.update(broker_url=redis_url)
    yield
    app.close()


@pytest.fixture(autouse=True)
def dashboard_redis(redis_url: str, settings: Any) -> Iterator[str]:
    """Point the web side (Redis client and channel layer) at the suite's redis-server,
    for every test: no test may reach a Redis the suite did not start."""
    settings.REDIS_URL = redis_url
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [redis_url], "capacity": 1000, "expiry": 30},
        }
    }
    yield redis_url
