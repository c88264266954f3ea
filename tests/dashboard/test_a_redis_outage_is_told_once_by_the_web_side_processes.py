"""A Redis outage is told once when it starts and once when it ends by each long-running
process of the web side (the event ingester, ``manage.py alerts run``), without a
traceback, and both work again afterwards: an event emitted after the outage is stored,
and a condition that arises after it opens an alert."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from lockstep.dashboard.alerts.evaluate import LEASE_NAME, LEASE_PREFIX
from lockstep.workers import create_topic, keys
from lockstep.workers.topics import register_group
from tests.dashboard.helpers import produce
from tests.dashboard.stack import REPO
from tests.dashboard.web_processes import WebSide
from tests.support import RestartableRedis, probe_until

pytestmark = pytest.mark.slow

# Several of each process's polls fail meanwhile (a call gives up after about 2 s of
# redis-py's own retries), so a process that told each failure would be caught.
OUTAGE_S = 5.0


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RestartableRedis]:
    server = RestartableRedis(tmp_path)
    server.start()
    yield server
    server.stop()


def start_alerts(web: WebSide) -> subprocess.Popen[bytes]:
    """``manage.py alerts run`` with its output in ``alerts.log`` (stopped by ``stop_all``)."""
    with open(web.logs / "alerts.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "alerts", "run"],
            cwd=REPO,
            env=web.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    web.procs["alerts"] = proc
    return proc


def emit(client: redis.Redis, n: int) -> None:
    client.xadd(keys.EVENTS, {"type": "offset_committed", "ts": n, "topic": "orders", "group": "g"})


def open_alert_rules(web: WebSide) -> list[str]:
    return [a["rule"] for a in json.loads(web.manage("alerts", "list", "--json"))]


def test_it_tells_an_outage_once_per_process_and_both_work_after_it(
    private_redis: RestartableRedis, tmp_path: Path
) -> None:
    web = WebSide(
        private_redis.url,
        tmp_path,
        LOCKSTEP_ALERT_EVAL_SECONDS="0.5",
        LOCKSTEP_ALERT_UNOWNED_AFTER_SECONDS="0",
    )
    web.migrate()
    client = redis.Redis.from_url(private_redis.url)
    try:
        web.start("ingester")
        start_alerts(web)
        emit(client, 1)
        assert probe_until(web.stored_count, lambda n: n == 1) == 1
        lease = LEASE_PREFIX + LEASE_NAME
        assert probe_until(lambda: client.exists(lease), bool), "the evaluator took its lease"

        private_redis.stop()
        time.sleep(OUTAGE_S)
        private_redis.start()

        emit(client, 2)
        stored_after = probe_until(web.stored_count, lambda n: n == 2, timeout=30)
        create_topic(client, "orders", 1)
        register_group(client, "orders", "g")
        produce(private_redis.url, "orders", ["order-1"])  # a backlog nobody consumes
        rules = probe_until(lambda: open_alert_rules(web), lambda r: "queue_unowned" in r, 30, 0.5)
        running = {name: proc.poll() is None for name, proc in web.procs.items()}
    finally:
        web.stop_all()
        client.close()

    assert running == {"ingester": True, "alerts": True}
    assert stored_after == 2
    assert "queue_unowned" in rules
    for name in ("ingester", "alerts"):
        log = web.log(name)
        assert log.count("Redis is unreachable") == 1, log
        assert log.count("Redis is reachable again") == 1, log
        assert "Traceback" not in log, log
