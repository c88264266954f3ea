"""The whole demo survives a Redis stall: ``lockstep dashboard --demo`` runs on a private
redis-server that is stopped (SIGSTOP) for 7 s, as a Redis blocked on a slow disk, while
the demo producer sends. No supervised process may exit (the supervisor would print
"<name> stopped (rc=…)" and stop all the others), the topic grows again afterwards, and
the producer's retries (same idempotency key) store no message twice (docs/
dashboard-service.md, "Redis stalls")."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
import redis

from lockstep.workers.inspect.messages import max_offset
from lockstep.workers.keys import stream
from lockstep.workers.redis_types import entries
from lockstep.workers.refs import QueueRef
from tests.support import RestartableRedis, free_port, probe_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
TOPIC, QUEUES = "orders", 8  # the demo's (lockstep/cli.py)
STALL_S = 7.0
# What honcho prints when a supervised process ends: none may, until the test stops it.
ENDED = re.compile(r"^.*\b(\w+) stopped \(rc=", re.MULTILINE)


@pytest.fixture
def stalled_redis(tmp_path: Path) -> Iterator[RestartableRedis]:
    (tmp_path / "redis").mkdir()
    server = RestartableRedis(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        if server.proc is not None and server.proc.poll() is None:
            os.kill(server.proc.pid, signal.SIGCONT)
        server.stop()


@pytest.fixture
def demo(tmp_path: Path, stalled_redis: RestartableRedis) -> Iterator[tuple[Path, int]]:
    """``lockstep dashboard --demo`` on ``stalled_redis``: its log file and pid."""
    cleared = ("LOCKSTEP_", "DATABASE_URL", "CELERY_", "CHANNELS_", "REDIS_URL", "DJANGO_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(cleared)}
    env |= {"PYTHONPATH": str(ROOT), "REDIS_URL": stalled_redis.url}
    env |= {"LOCKSTEP_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1"}
    log = tmp_path / "demo.log"
    command = [sys.executable, "-m", "lockstep", "dashboard", "--demo"]
    command += ["--port", str(free_port()), "--concurrency", "1"]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=out, stderr=out)
    try:
        yield log, proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(90)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _sent(client: redis.Redis) -> int:
    return sum(max_offset(client, QueueRef(TOPIC, queue)) for queue in range(QUEUES))


def _message_ids(client: redis.Redis) -> Counter[str]:
    ids: Counter[str] = Counter()
    for queue in range(QUEUES):
        for _, fields in entries(client.xrange(stream(QueueRef(TOPIC, queue)))):
            ids[json.loads(fields[b"b"])["id"]] += 1
    return ids


def _dead_letters_stored(log: Path) -> int:
    """Dead letters the demo's database holds: only the beat's sync task stores them."""
    database = log.parent / "data" / "db.sqlite3"
    with closing(sqlite3.connect(database, timeout=10)) as db:
        return int(db.execute("SELECT COUNT(*) FROM deadletters_deadletter").fetchone()[0])


def _ended(log: Path) -> list[str]:
    return ENDED.findall(log.read_text(errors="replace"))


def test_it_keeps_every_process_and_stores_each_message_once(
    demo: tuple[Path, int], stalled_redis: RestartableRedis
) -> None:
    log, _ = demo
    client = redis.Redis.from_url(stalled_redis.url, socket_timeout=10)
    started = probe_until(
        lambda: "alert evaluator active" in log.read_text(errors="replace") and _sent(client),
        lambda ready: bool(ready) and ready > 20,
        timeout=180,
        interval=0.1,
    )
    assert started and started > 20, f"the demo did not start:\n{log.read_text()[-4000:]}"
    assert not _ended(log), log.read_text()[-4000:]

    assert stalled_redis.proc is not None
    os.kill(stalled_redis.proc.pid, signal.SIGSTOP)
    try:
        # The stall itself is the scenario: every process meets a Redis that does not answer.
        probe_until(lambda: _ended(log), bool, timeout=STALL_S, interval=0.2)
    finally:
        os.kill(stalled_redis.proc.pid, signal.SIGCONT)
    before, synced = _sent(client), _dead_letters_stored(log)

    grown = probe_until(lambda: _sent(client), lambda sent: sent > before + 20, timeout=60)
    assert grown > before + 20, f"no message sent after the stall:\n{log.read_text()[-4000:]}"
    # Beat sends its tasks and the worker runs them again (both sat on the stalled broker):
    # the dead-letter sync (every 2 s) stores the poison orders dead-lettered since.
    ran = probe_until(lambda: _dead_letters_stored(log), lambda n: n > synced, timeout=60)
    assert ran > synced, f"no task ran after the stall:\n{log.read_text()[-4000:]}"
    assert not _ended(log), log.read_text()[-6000:]
    twice = {message_id: n for message_id, n in _message_ids(client).items() if n > 1}
    assert not twice, f"stored more than once: {twice}"
