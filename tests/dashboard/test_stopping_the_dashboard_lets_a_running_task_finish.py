"""Stopping ``lockstep dashboard`` (SIGTERM, as a service manager or Ctrl-C does) lets a
task its Celery worker runs finish: the supervisor signals each role's own process, which
shuts down warm, and never the worker's pool children (as systemd's ``KillMode=mixed`` in
``deploy/systemd/``). Signalled themselves, the children died mid-task and the worker
logged ``WorkerLostError`` with a traceback.

The task is held in the middle by the test taking SQLite's write lock first: the task's
delete waits for it (the database's busy timeout) until the test lets go."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from celery import Celery

from tests.dashboard.stack import REPO, Site, site_env
from tests.support import free_port, probe_until

pytestmark = pytest.mark.slow

TASK = "lockstep.dashboard.monitor.tasks.prune_events"
OTHER_ROLES = ("web", "ingester", "alerts", "analytics", "beat")


def _log(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _is_running(sender: Celery, task_id: str) -> bool:
    """Whether a worker's pool has started the task (``inspect active``)."""
    replies = sender.control.inspect(timeout=1.0).active() or {}
    return any(task["id"] == task_id for tasks in replies.values() for task in tasks)


def test_a_task_running_at_the_stop_finishes_and_nothing_is_killed(
    redis_url: str, tmp_path: Path
) -> None:
    site = Site(site_env(redis_url, tmp_path, LOG_LEVEL="INFO"), free_port(), tmp_path)
    site.migrate()
    command = [sys.executable, "-m", "lockstep", "dashboard", "--no-migrate"]
    command += ["--port", str(site.port), "--concurrency", "1"]
    for role in OTHER_ROLES:
        command += ["--without", role]
    log = tmp_path / "dashboard.log"
    with log.open("wb") as out:
        dashboard = subprocess.Popen(
            command, cwd=REPO, env=site.env, stdout=out, stderr=subprocess.STDOUT
        )
    database = sqlite3.connect(tmp_path / "db.sqlite3", timeout=30, isolation_level=None)
    # Not the current app: shared tasks resolve to the current app, and later tests on
    # this worker would send the dashboard's tasks through this one, unrouted.
    sender = Celery(broker=redis_url, set_as_current=False)
    try:
        assert probe_until(lambda: " ready." in _log(log), bool, timeout=120), _log(log)
        database.execute("BEGIN IMMEDIATE")  # the task's first write waits behind this
        queue = site.env.get("LOCKSTEP_CELERY_QUEUE", "lockstep")
        task_id = sender.send_task(TASK, queue=queue).id
        # Received is not yet running: a task still waiting for the pool is handed back to
        # the broker by a warm shutdown, and never runs here.
        running = probe_until(lambda: _is_running(sender, task_id), bool, timeout=60)
        assert running, _log(log)

        dashboard.send_signal(signal.SIGTERM)
        signalled = probe_until(lambda: "sending SIGTERM to worker" in _log(log), bool, timeout=30)
        assert signalled, _log(log)
        database.execute("ROLLBACK")  # the task may go on now
        exit_status = dashboard.wait(timeout=120)
    finally:
        database.close()
        sender.close()
        if dashboard.poll() is None:
            dashboard.kill()
            dashboard.wait()

    output = _log(log)
    assert exit_status == 0, output[-4000:]
    assert f"{TASK}[" in output and "succeeded" in output, output[-4000:]
    assert "WorkerLostError" not in output, output[-4000:]
    assert "Traceback" not in output, output[-4000:]
