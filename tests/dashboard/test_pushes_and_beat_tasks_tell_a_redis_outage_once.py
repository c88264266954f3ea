"""Live pushes (alert pushes, the ingester's coalesced pushes) and the beat tasks over
Redis (``sample_lag``, ``sync_dead_letters``) meet a Redis outage without a traceback:
the process's outage record tells it once when it starts and once when it ends, pushes
are skipped and the tasks return ``SKIPPED`` instead of failing."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lockstep.dashboard.alerts import push
from lockstep.dashboard.deadletters.tasks import sync_dead_letters
from lockstep.dashboard.monitor.tasks import sample_lag
from lockstep.dashboard.web import redis_conn
from lockstep.dashboard.web.publish import publish
from lockstep.workers.outage import Outage
from tests.support import RestartableRedis

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def private_redis(tmp_path: Path, settings: Any) -> Iterator[RestartableRedis]:
    """A restartable Redis for both the dashboard's client and the channel layer."""
    server = RestartableRedis(tmp_path)
    server.start()
    settings.REDIS_URL = server.url
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [server.url]},
        }
    }
    yield server
    server.stop()


@pytest.fixture
def fresh_outage(monkeypatch: pytest.MonkeyPatch) -> Outage:
    """This test's own per-process record (other tests of the process may have left the
    shared one open)."""
    outage = Outage()
    monkeypatch.setattr(redis_conn, "redis_outage", outage)
    return outage


def live_push() -> int:
    return publish([("overview", {"type": "overview.update"})], "live pushes")


def test_it_tells_an_outage_met_by_pushes_and_tasks_once_and_skips_them(
    private_redis: RestartableRedis, fresh_outage: Outage, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    assert push.publish() is True

    private_redis.stop()
    during = [push.publish(), live_push(), sample_lag(), sync_dead_letters(), push.publish()]
    private_redis.start()
    after = [push.publish(), live_push(), sample_lag()]

    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert during == [False, 0, redis_conn.SKIPPED, redis_conn.SKIPPED, False]
    assert after == [True, 1, 0]
    assert [r.getMessage()[:36] for r in warnings] == [
        "lockstep: Redis is unreachable (Conn",
        "lockstep: Redis is reachable again a",
    ], [r.getMessage() for r in warnings]
    assert [r.exc_info for r in caplog.records if r.exc_info] == []
    assert not fresh_outage.down
