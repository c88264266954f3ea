"""An analytics run goes to the analytics worker (``lockstep analytics``, its own Celery
queue): while its Spark job runs, the live worker still runs ``sample_lag``; when it
ends, the child process that ran it exits and its JVM with it (docs/dashboard-service.md).

The run is held in the middle by the test taking SQLite's write lock once the run's JVM
is up: the run's next progress write waits for it, while ``sample_lag`` (Redis only) need
not. Before the analytics queue existed, the one live worker took the run and
``sample_lag`` waited behind it."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from lockstep.dashboard.celery import app as celery_app
from lockstep.dashboard.monitor.tasks import sample_lag
from lockstep.dashboard.reports.tasks import run_nightly_analytics
from lockstep.workers import create_topic, keys
from lockstep.workers import events as ev
from lockstep.workers.events import read_all_events
from tests.dashboard.stack import REPO
from tests.dashboard.web_processes import WebSide
from tests.support import probe_until

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(600)]

ENDED = ("ok", "empty", "failed")


def _children() -> dict[int, list[int]]:
    """Every process's children, from /proc."""
    found: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended meanwhile
        found.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return found


def _descendants(pid: int) -> dict[int, str]:
    """The processes below ``pid``: pid -> command name."""
    children, out, todo = _children(), {}, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            try:
                out[child] = Path(f"/proc/{child}/comm").read_text().strip()
            except OSError:
                continue
            todo.append(child)
    return out


def _java(pid: int) -> dict[int, str]:
    return {p: name for p, name in _descendants(pid).items() if name == "java"}


def _ancestors(pid: int, root: int) -> list[int]:
    """``pid``'s parents below ``root`` (the process that ran it, and any in between)."""
    found: list[int] = []
    while True:
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        if pid in (root, 0, 1):
            return found
        found.append(pid)


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


class _Workers(WebSide):
    """The live worker (``lockstep worker --concurrency 1``) and the analytics worker
    (``lockstep analytics``) on a database of their own."""

    def start_worker(self, role: str, *args: str) -> subprocess.Popen[bytes]:
        name = f"{role}-{self.port}@test"
        with open(self.logs / f"{role}.log", "ab") as log:
            command = [sys.executable, "-m", "lockstep", role, "--loglevel", "WARNING"]
            proc = subprocess.Popen(
                [*command, "--name", name, *args],
                cwd=REPO,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.procs[role] = proc
        answered = probe_until(
            lambda: celery_app.control.ping(destination=[name], timeout=0.5),
            bool,
            timeout=60,
        )
        assert answered, self.log(role)
        return proc

    def run_state(self, db: sqlite3.Connection | None = None) -> tuple[str, str]:
        query = "SELECT status, stage FROM reports_analyticsrun ORDER BY id DESC LIMIT 1"
        rows = list(db.execute(query)) if db else self.query(query)
        return (str(rows[0][0]), str(rows[0][1])) if rows else ("", "")


@pytest.fixture
def workers(
    redis_client: redis.Redis, redis_url: str, tmp_path: Path, settings: Any
) -> Iterator[_Workers]:
    # One topic with one group: each sample_lag appends one lag_sampled event.
    create_topic(redis_client, "orders", 1)
    redis_client.sadd(keys.groups_of_topic("orders"), "mailer")
    side = _Workers(
        redis_url,
        tmp_path,
        LOCKSTEP_CELERY_QUEUE=settings.LOCKSTEP_CELERY_QUEUE,
        LOCKSTEP_ANALYTICS_URI=str(tmp_path / "analytics"),  # no data: an empty day
        SPARK_MASTER="local[1]",
        LOCKSTEP_SPARK_SHUFFLE_PARTITIONS="1",
    )
    side.migrate()
    try:
        side.start_worker("worker", "--concurrency", "1")
        side.start_worker("analytics")
        yield side
    finally:
        side.stop_all()


def _samples(client: redis.Redis) -> int:
    return sum(1 for e in read_all_events(client) if e["type"] == ev.LAG_SAMPLED)


def test_a_run_neither_delays_sample_lag_nor_leaves_its_jvm_behind(
    workers: _Workers, redis_client: redis.Redis
) -> None:
    roots = [p.pid for p in workers.procs.values()]
    run_nightly_analytics.delay()
    jvms = probe_until(
        lambda: {p: n for root in roots for p, n in _java(root).items()}, bool, timeout=240
    )
    assert jvms, (workers.run_state(), workers.log("analytics"), workers.log("worker"))
    (jvm,) = jvms
    ran_in = _ancestors(jvm, workers.procs["analytics"].pid)
    held = sqlite3.connect(workers.db, timeout=30, isolation_level=None)
    held.execute("BEGIN IMMEDIATE")  # the run's next write waits: it stays in progress
    try:
        sample_lag.delay()
        sampled = probe_until(lambda: _samples(redis_client), bool, timeout=30)
        during = workers.run_state(held)
    finally:
        held.execute("ROLLBACK")
        held.close()
    assert sampled == 1, workers.log("worker")
    assert during[0] == "running"

    # A JVM's start and an empty day's job: a minute here, several beside busy workers.
    ended = probe_until(workers.run_state, lambda state: state[0] in ENDED, timeout=300)
    assert ended[0] == "empty", workers.log("analytics")
    # The child that ran it exited, and its JVM with it: nothing of the run remains.
    gone = probe_until(lambda: [p for p in [jvm, *ran_in] if _alive(p)], lambda a: not a, 30)
    assert gone == []
    assert _java(workers.procs["analytics"].pid) == {}
