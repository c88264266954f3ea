"""The ingester (``manage.py ingest_events``) rides out a Redis restart and a database that
refuses writes for a while: it backs off (0.5 s, doubling), keeps running, and once the
store answers again every event is stored exactly once. Its retries during a Redis outage
are DEBUG lines (the outage itself is told once: see
test_a_redis_outage_is_told_once_by_the_web_side_processes), so that test runs it with
``LOG_LEVEL=DEBUG``. Its live pushes report an outage of its own Redis into the same
record as its reads, so an outage they meet too is still told once."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from lockstep.dashboard.web.redis_conn import channel_layer_outage
from lockstep.workers import keys
from lockstep.workers.events import EventLog, count_events
from lockstep.workers.outage import redis_outage
from tests.dashboard.web_processes import WebSide, stream_ids
from tests.support import RestartableRedis, probe_until

RETRY = re.compile(r"ingester: (Redis|database) unavailable .*; retrying in ([0-9.]+)s")


# A process's start-up (Django and its apps) takes seconds, and more than 15 on a loaded
# machine: a wait that includes one gets this long.
STARTUP_S = 120.0
# Once Redis or the database answers again: the ingester's next retry (at most 4 s after
# the three of 0.5, 1 and 2 s the tests wait for), then storing 300 events.
RECOVERY_S = 60.0


def _retry_delays(log: str, what: str) -> list[float]:
    return [float(m.group(2)) for m in RETRY.finditer(log) if m.group(1) == what]


def _retries_logged(web: WebSide, what: str, count: int) -> int:
    """Until the ingester has logged ``count`` retries after ``what`` failed; how many."""
    return probe_until(
        lambda: len(_retry_delays(web.log("ingester"), what)), lambda n: n >= count, STARTUP_S
    )


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RestartableRedis]:
    server = RestartableRedis(tmp_path)
    server.start()
    yield server
    if server.proc is not None and server.proc.poll() is None:
        server.stop()


@pytest.mark.slow
def test_it_rides_out_a_redis_restart_and_stores_everything_once(
    private_redis: RestartableRedis, tmp_path: Path
) -> None:
    web = WebSide(private_redis.url, tmp_path, LOCKSTEP_PUSH_INTERVAL="0.2", LOG_LEVEL="DEBUG")
    web.migrate()
    client = redis.Redis.from_url(private_redis.url)
    events = EventLog(client, flush_interval=0.05)  # keeps what it cannot write yet
    events.start()
    try:
        web.start("ingester")
        for i in range(100):
            events.emit("offset_committed", topic="orders", group="g", queue=i % 4)
        # Running, and caught up, before Redis goes: else the outage would meet an
        # ingester still starting, which has nothing to retry yet.
        assert probe_until(web.stored_count, lambda n: n == 100, STARTUP_S) == 100

        private_redis.stop()
        for i in range(100, 150):  # emitted while Redis is down: buffered by the runtime
            events.emit("offset_committed", topic="orders", group="g", queue=i % 4)
        # Down until the ingester has retried three times (0.5, 1 and 2 s apart): however
        # slowly it runs, the outage outlasts the back-off the test asserts on.
        assert _retries_logged(web, "Redis", 3) >= 3, web.log("ingester")
        private_redis.start()
        for i in range(150, 250):
            events.emit("offset_committed", topic="orders", group="g", queue=i % 4)

        stored = probe_until(web.stored_count, lambda n: n >= 250, RECOVERY_S)
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


# On PostgreSQL too: its errors reach the ingester by other paths (COPY, a trigger's
# exception); the Redis restart above does not depend on the store.
@pytest.mark.slow
@pytest.mark.on_postgres
def test_it_retries_a_batch_the_database_refused_without_losing_or_doubling(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    web = WebSide(redis_url, tmp_path)
    web.migrate()
    pipe = redis_client.pipeline(transaction=False)
    for i in range(300):
        pipe.xadd(
            keys.EVENTS,
            {"type": "lock_acquired", "ts": 1, "topic": "orders", "group": "g", "queue": i % 3},
        )
    pipe.execute()
    # The database refuses every new event row until it accepts them again.
    web.refuse_event_rows()
    try:
        web.start("ingester")
        assert _retries_logged(web, "database", 3) >= 3, web.log("ingester")
        assert web.stored_count() == 0
        assert web.query("SELECT last_id FROM monitor_ingestcursor") in ([], [("0-0",)])
        web.accept_event_rows()

        stored = probe_until(web.stored_count, lambda n: n >= 300, RECOVERY_S)
    finally:
        web.stop_all()

    assert stored == 300
    assert sorted(web.stored_ids()) == sorted(stream_ids(redis_client))
    assert web.query(
        "SELECT queue, value FROM monitor_eventcounter "
        "WHERE name = 'lock_owner_changes' ORDER BY queue"
    ) == [(0, 100), (1, 100), (2, 100)]
    assert _retry_delays(web.log("ingester"), "database")[:3] == [0.5, 1.0, 2.0]


def test_its_live_pushes_tell_an_outage_of_its_redis_in_the_same_record(
    settings: Any,
) -> None:
    """The channel layer's host as the settings give it (a dict of connection options) or
    as a plain URL: on REDIS_URL's server, a push that fails or succeeds opens or ends the
    process's one outage; on another server, an outage of that server's own."""
    layer = settings.CHANNEL_LAYERS["default"]
    for host in ({"address": settings.REDIS_URL, "socket_timeout": 35.0}, settings.REDIS_URL):
        settings.CHANNEL_LAYERS = {"default": {**layer, "CONFIG": {"hosts": [host]}}}
        assert channel_layer_outage() is redis_outage, host
    other = {"address": "redis://127.0.0.1:1/0", "socket_timeout": 35.0}
    settings.CHANNEL_LAYERS = {"default": {**layer, "CONFIG": {"hosts": [other]}}}
    assert channel_layer_outage() is not redis_outage
