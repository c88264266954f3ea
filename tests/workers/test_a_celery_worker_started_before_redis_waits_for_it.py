"""A Celery worker with the Lockstep bootstep, started before its Redis is up, waits for
it instead of dying, consumes in order once Redis is there, and stops with exit code 0."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from lockstep.workers import Producer, create_topic
from tests.support import RestartableRedis, wait_until
from tests.workers.file_handlers import FILE_HANDLER, RECORD_FILE_ENV, recorded
from tests.workers.harness import REPO, body, order_violations

pytestmark = pytest.mark.slow


def _start_worker(url: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    subscriptions = [{"topic": "orders", "group": "mailer", "handler": FILE_HANDLER}]
    env = {
        **os.environ,
        "REDIS_URL": url,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "PYTHONPATH": str(REPO),
        "LOCKSTEP_SUBSCRIPTIONS": json.dumps(subscriptions),
        RECORD_FILE_ENV: str(tmp_path / "records.jsonl"),
    }
    command = [sys.executable, "-m", "celery", "-A", "lockstep.dashboard.celery", "worker"]
    options = ["--pool", "solo", "--without-mingle", "--without-gossip", "-n", "early@%h"]
    with (tmp_path / "worker.log").open("wb") as out:
        return subprocess.Popen(
            [*command, *options, "--loglevel", "INFO"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def test_it_waits_for_redis_and_then_consumes_in_order(tmp_path: Path) -> None:
    server = RestartableRedis(tmp_path)
    worker = _start_worker(server.url, tmp_path)
    log = tmp_path / "worker.log"
    try:
        # Three tries, each after a longer back-off (0.5 s, then 1 s): it keeps waiting.
        wait_until(
            lambda: log.read_text(errors="replace").count("waits for Redis") >= 3,
            30,
            "the bootstep to say three times that it waits for Redis",
        )
        assert worker.poll() is None, log.read_text(errors="replace")

        server.start()
        client = redis.Redis.from_url(server.url)
        create_topic(client, "orders", 4)
        producer = Producer(server.url)
        sent = {f"order-{k}": 8 for k in range(6)}
        for seq in range(8):
            for key in sent:
                producer.send("orders", key, body(seq))
        records = tmp_path / "records.jsonl"
        wait_until(lambda: len(recorded(records)) >= 48, 60, "48 messages handled")
        assert order_violations(recorded(records), sent) == {}
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(30)
        finally:
            worker.kill()
            server.stop()
    output = log.read_text(errors="replace")
    assert worker.returncode == 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
