"""The ingester (``manage.py ingest_events``) rides out a Redis restart and a database that
refuses writes for a while: it backs off (0.5 s, doubling), keeps running, and once the
store answers again every event is stored exactly once. Its retries during a Redis outage
are DEBUG lines (the outage itself is told once: see
test_a_redis_outage_is_told_once_by_the_web_side_processes), so that test runs it with
``LOG_LEVEL=DEBUG``."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from lockstep.workers import keys
from lockstep.workers.events import EventLog, count_events
from tests.dashboard.helpers import wait_until
from tests.dashboard.web_processes import WebSide, stream_ids
from tests.support import RestartableRedis

pytestmark = pytest.mark.slow

RETRY = re.compile(r"ingester: (Redis|database) unavailable .*; retrying in ([0-9.]+)s")


def _retry_delays(log: str, what: str) -> list[float]:
    return [float(m.group(2)) for m in RETRY.finditer(log) if m.group(1) == what]


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RestartableRedis]:
    server = RestartableRedis(tmp_path)
    server.start()
    yield server
    if server.proc is not None and server.proc.poll() is None:
        server.stop()


def test_it_rides_out_a_redis_restart_and_stores_everything_once(
    private_redis: RestartableRedis, tmp_path: Path
) -> None:
    web = WebSide(private_redis.url, tmp_path, LOCKSTEP_PUSH_INTERVAL="0.2", LOG_LEVEL="DEBUG")
    web.manage("migrate", "--noinput")
    client = redis.Redis.from_url(private_redis.url)
    events = EventLog(client, flush_interval=0.05)  # keeps what it cannot write yet
    events.start()
    try:
        web.start("ingester")
        for i in range(100):
            events.emit("offset_committed", topic="orders", group="g", queue=i % 4)
        wait_until(web.stored_count, lambda n: n == 100)

        private_redis.stop()
        for i in range(100, 150):  # emitted while Redis is down: buffered by the runtime
            events.emit("offset_committed", topic="orders", group="g", queue=i % 4)
        time.sleep(4)  # long enough for a few doubling retries
        private_redis.start()
        for i in range(150, 250):
            events.emit("offset_committed", topic="orders", group="g", queue=i % 4)

        stored = wait_until(web.stored_count, lambda n: n >= 250, timeout=30)
        assert web.procs["ingester"].poll() is None, "the ingester kept running"
    finally:
        events.stop()
        web.stop_all()

    assert stored == 250 == count_events(client)
    assert sorted(web.stored_ids()) == sorted(stream_ids(client))
    delays = _retry_delays(web.log("ingester"), "Redis")
    assert delays[:3] == [0.5, 1.0, 2.0], web.log("ingester")
    assert web.log("ingester").count("Redis is reachable again") == 1, web.log("ingester")
    client.close()


def test_it_retries_a_batch_the_database_refused_without_losing_or_doubling(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    web = WebSide(redis_url, tmp_path)
    web.manage("migrate", "--noinput")
    pipe = redis_client.pipeline(transaction=False)
    for i in range(300):
        pipe.xadd(
            keys.EVENTS,
            {"type": "lock_acquired", "ts": 1, "topic": "orders", "group": "g", "queue": i % 3},
        )
    pipe.execute()
    # The database refuses every new event row until the trigger is dropped.
    web.query(
        "CREATE TRIGGER refuse BEFORE INSERT ON monitor_event "
        "BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END"
    )
    try:
        web.start("ingester")
        wait_until(
            lambda: len(_retry_delays(web.log("ingester"), "database")),
            lambda n: n >= 3,
            timeout=20,
        )
        assert web.stored_count() == 0
        assert web.query("SELECT last_id FROM monitor_ingestcursor") in ([], [("0-0",)])
        web.query("DROP TRIGGER refuse")

        stored = wait_until(web.stored_count, lambda n: n >= 300, timeout=30)
    finally:
        web.stop_all()

    assert stored == 300
    assert sorted(web.stored_ids()) == sorted(stream_ids(redis_client))
    assert web.query(
        "SELECT queue, value FROM monitor_eventcounter "
        "WHERE name = 'lock_owner_changes' ORDER BY queue"
    ) == [(0, 100), (1, 100), (2, 100)]
    assert _retry_delays(web.log("ingester"), "database")[:3] == [0.5, 1.0, 2.0]
