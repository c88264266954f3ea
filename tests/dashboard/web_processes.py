"""The web side as real processes for the ingester tests: ``manage.py ingest_events`` and
daphne as subprocesses on a file SQLite database of their own, read back with sqlite3."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import redis

from tests.support import free_port
from workers import keys
from workers.message import ConsumeContext, ConsumeStatus, Message
from workers.redis_types import entries

REPO = Path(__file__).resolve().parents[2]


class WebSide:
    """Start, stop (SIGTERM) or kill (SIGKILL) the ingester and daphne; each can be started
    again. Their output goes to ``<tmp>/<name>.log``."""

    def __init__(self, redis_url: str, tmp: Path, **extra_env: str) -> None:
        self.db = tmp / "db.sqlite3"
        self.logs = tmp
        self.port = free_port()
        self.env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "REDIS_URL": redis_url,
            "CHANNELS_REDIS_URL": redis_url,
            "CELERY_BROKER_URL": redis_url,
            "DATABASE_URL": f"sqlite:///{self.db}",
            "LOCKSTEP_PUSH_INTERVAL": "0.2",
            "LOG_LEVEL": "WARNING",
            **extra_env,
        }
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def manage(self, *args: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=self.env,
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stderr}")
        return done.stdout

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        commands = {
            "ingester": [sys.executable, "manage.py", "ingest_events", *args],
            "web": [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port),
                    "dashboard.asgi:application"],
        }
        with open(self.logs / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(commands[name], cwd=REPO, env=self.env, stdout=log,
                                    stderr=subprocess.STDOUT)
        self.procs[name] = proc
        if name == "web":
            self._wait_for_http()
        return proc

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.stop(name)

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def query(self, sql: str) -> list[tuple[object, ...]]:
        with sqlite3.connect(self.db, timeout=30) as db:
            return list(db.execute(sql))

    def stored_count(self) -> int:
        (count,), = self.query("SELECT COUNT(*) FROM monitor_event")
        assert isinstance(count, int)
        return count

    def stored_ids(self) -> list[str]:
        return [str(r[0]) for r in self.query("SELECT stream_id FROM monitor_event")]

    def _wait_for_http(self) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.procs["web"].poll() is not None:
                raise RuntimeError(f"daphne exited:\n{self.log('web')}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/login/",
                                            timeout=1) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        raise RuntimeError(f"daphne did not answer:\n{self.log('web')}")


def stream_ids(client: redis.Redis) -> list[str]:
    """Every entry ID of the event stream, read in pages."""
    out: list[str] = []
    after = "-"
    while True:
        page = entries(client.xrange(keys.EVENTS, min=after, max="+", count=10_000))
        if not page:
            return out
        out += [i.decode() for i, _ in page]
        after = "(" + out[-1]


def sleep_5ms(messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
    """A handler with a steady I/O-bound pace (5 ms a message), for rate comparisons."""
    time.sleep(0.005 * len(messages))
    return ConsumeStatus.SUCCESS


SLEEP_5MS = "tests.dashboard.web_processes.sleep_5ms"
