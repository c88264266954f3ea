"""A real Celery worker, started with the Lockstep bootstep, consumes a topic in order.

Its broker is always the suite's standalone redis-server (Celery speaks only to a
standalone Redis); Lockstep's data is on ``redis_url``, a Redis Cluster in the
``[cluster]`` case (``on_cluster``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from lockstep.workers import Producer, create_topic
from lockstep.workers.events import read_all_events

pytestmark = pytest.mark.on_cluster

ROOT = Path(__file__).resolve().parents[2]


def _start_worker(redis_url: str, broker_url: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.update(
        {
            "REDIS_URL": redis_url,
            "CELERY_BROKER_URL": broker_url,
            "CHANNELS_REDIS_URL": broker_url,
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "PYTHONPATH": str(ROOT),
            "LOCKSTEP_SUBSCRIPTIONS": json.dumps(
                [
                    {
                        "topic": "orders",
                        "group": "mailer",
                        "batch_size": 4,
                        "handler": "tests.workers.celery_handlers.record",
                    }
                ]
            ),
        }
    )
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "lockstep.dashboard.celery",
            "worker",
            "--pool",
            "solo",
            "--loglevel",
            "INFO",
            "--without-mingle",
            "--without-gossip",
            "-n",
            "test@%h",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _wait_handled(client: redis.Redis, keys: list[str], per_key: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(client.llen(f"handled:{k}") >= per_key for k in keys):
            return
        time.sleep(0.1)
    raise AssertionError("the worker did not handle every message in time")


def test_it_consumes_every_key_in_order_inside_a_celery_worker(
    redis_url: str, standalone_redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    create_topic(redis_client, "orders", 8)
    worker = _start_worker(redis_url, standalone_redis_url, tmp_path)
    try:
        producer = Producer(redis_url)
        keys = [f"order-{i}" for i in range(12)]
        for n in range(25):
            for k in keys:
                producer.send("orders", k, str(n).encode())
        _wait_handled(redis_client, keys, 25, timeout=60)
        for k in keys:
            handled = [int(x) for x in redis_client.lrange(f"handled:{k}", 0, -1)]
            assert handled == list(range(25)), f"{k} handled out of order: {handled}"
        pids = {int(p) for p in redis_client.hvals("handled-by")}
        assert pids == {worker.pid}, "messages must be handled in the worker's main process"
    finally:
        worker.send_signal(signal.SIGTERM)
        output = worker.communicate(timeout=30)[0].decode()
    assert worker.returncode == 0, output
    assert "lockstep: consumer" in output

    events = read_all_events(redis_client)
    released = {e["queue"] for e in events if e["type"] == "lock_released"}
    assert released == set(range(8)), "a stopping worker releases every queue it held"
    for q in range(8):
        lock = redis_client.hgetall(f"ls:{{orders:{q}}}:lock:mailer")
        assert lock[b"owner"] == b""
        committed = int(redis_client.hget(f"ls:{{orders:{q}}}:offset:mailer", "committed") or 0)
        assert committed == int(redis_client.get(f"ls:{{orders:{q}}}:seq") or 0)
