"""Two ingesters (``manage.py ingest_events``; file SQLite, or the PostgreSQL run's server)
on an event log of four shards split the streams between them while the runtime's event
log appends thousands of events a second; one is SIGKILLed mid-run and the other takes
its shards over once their leases expire, resuming from the cursors in the database:
every event appended is stored exactly once (the stored stream IDs are the appended
ones), and each is counted once."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from lockstep.dashboard.monitor.ingest_leases import LEASE_PREFIX
from lockstep.workers import events as ev
from lockstep.workers.events import EventLog, count_events, event_streams
from tests.dashboard.stack import REPO
from tests.dashboard.web_processes import WebSide, stream_ids
from tests.support import probe_until

pytestmark = [pytest.mark.slow, pytest.mark.on_postgres]

SHARDS = 4
LEASE_S = 2.0  # short, so the takeover is quick; the default is 5 s
STARTUP_S = 120.0  # a process's start-up (Django) takes seconds, more on a loaded machine


class EventLoad:
    """The runtime's buffered event appender over four shards, driven from a thread;
    every 10th event is a ``lock_acquired`` (counted for /metrics)."""

    def __init__(self, client: redis.Redis) -> None:
        self.log = EventLog(client, flush_interval=0.05, shards=SHARDS)
        self.emitted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> EventLoad:
        self.log.start()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self.log.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            for _ in range(50):
                n = self.emitted
                kind = ev.LOCK_ACQUIRED if n % 10 == 0 else ev.CONSUME_FAILED
                self.log.emit(
                    kind,
                    topic="orders",
                    group="mailer",
                    queue=n % 16,
                    key=f"order-{n}",
                    token=n,
                    details={"offsets": [n], "n": n},
                )
                self.emitted += 1
            time.sleep(0.01)  # at most 5,000 a second: a pile-up a loaded machine catches up


class Ingesters:
    """Named ``manage.py ingest_events`` processes sharing the site's environment."""

    def __init__(self, web: WebSide) -> None:
        self.web = web
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str) -> None:
        with open(self.web.logs / f"{name}.log", "ab") as log:
            self.procs[name] = subprocess.Popen(
                [sys.executable, "manage.py", "ingest_events", "--batch", "250"],
                cwd=REPO,
                env=self.web.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def member_id(self, name: str) -> str:
        """The id the ingester announced (``ingesting events as <id>``)."""
        line = probe_until(
            lambda: self.web.log(name), lambda text: "ingesting events as " in text, STARTUP_S
        )
        return line.split("ingesting events as ", 1)[1].split()[0]

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.kill()
        proc.wait(10)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            proc.terminate()
        for proc in self.procs.values():
            proc.wait(30)
        self.procs.clear()


@pytest.fixture
def web(redis_url: str, redis_client: redis.Redis, tmp_path: Path) -> Iterator[WebSide]:
    side = WebSide(
        redis_url,
        tmp_path,
        LOCKSTEP_EVENT_SHARDS=str(SHARDS),
        LOCKSTEP_INGEST_LEASE_SECONDS=str(LEASE_S),
    )
    side.migrate()
    yield side
    side.stop_all()


@pytest.fixture
def ingesters(web: WebSide) -> Iterator[Ingesters]:
    pair = Ingesters(web)
    yield pair
    pair.stop_all()


def _cursors(web: WebSide) -> dict[str, str]:
    """Stream (cursor name) -> the last ID stored of it."""
    return {
        str(name): str(last)
        for name, last in web.query("SELECT name, last_id FROM monitor_ingestcursor")
    }


def _holders(client: redis.Redis) -> dict[str, str]:
    """Stream -> the member holding its lease (streams nobody holds left out)."""
    held = {s: client.get(LEASE_PREFIX + s) for s in event_streams(client, SHARDS)}
    return {s: h.decode() for s, h in held.items() if isinstance(h, bytes)}


def test_it_splits_the_shards_and_loses_or_doubles_nothing_when_one_is_killed(
    web: WebSide, ingesters: Ingesters, redis_client: redis.Redis
) -> None:
    ingesters.start("first")
    ingesters.start("second")
    first, second = ingesters.member_id("first"), ingesters.member_id("second")
    # Both read: each holds the leases of two of the four shards (and one of them
    # ls:events, idle once the log is sharded). Split before the load starts, so the
    # events a slow start-up would pile up do not make the catch-up the test's length.
    split = probe_until(
        lambda: _holders(redis_client),
        lambda h: len(h) == SHARDS + 1 and set(h.values()) == {first, second},
        STARTUP_S,
    )
    assert set(split.values()) == {first, second}, split
    shards_of_first = sorted(s for s, m in split.items() if m == first and "{s" in s)
    assert len(shards_of_first) == SHARDS // 2, split
    with EventLoad(redis_client) as load:
        # The first has stored in each of its shards (only it may: it holds them).
        moved = probe_until(
            lambda: _cursors(web),
            lambda c: all(c.get(s, "0-0") != "0-0" for s in shards_of_first),
            60,
        )
        assert all(moved.get(s, "0-0") != "0-0" for s in shards_of_first), moved
        probe_until(web.stored_count, lambda n: n > 3000, 60)

        ingesters.kill("first")  # SIGKILL: no release, maybe mid-transaction
        stored_at_kill = web.stored_count()
        # Its leases lapse; the survivor takes its shards and resumes from their cursors.
        taken_over = probe_until(
            lambda: _holders(redis_client),
            lambda h: len(h) == SHARDS + 1 and set(h.values()) == {second},
            LEASE_S * 10 + 30,
        )
        assert set(taken_over.values()) == {second}, taken_over
        probe_until(web.stored_count, lambda n: n > stored_at_kill + 3000, 60)
    total = count_events(redis_client)
    assert total == load.emitted

    # A deadline for the catch-up, not a speed (the machine may be shared).
    final = probe_until(web.stored_count, lambda n: n >= total, timeout=180)
    ingesters.stop_all()

    assert 0 < stored_at_kill < total, "the kill happened mid-run"
    assert final == total
    stored = web.stored_ids()
    assert len(stored) == len(set(stored)), "no event stored twice"
    assert set(stored) == set(stream_ids(redis_client)), "no event lost"
    by_survivor = int(web.log("second").rsplit("stopped after storing ", 1)[1].split()[0])
    assert 0 < by_survivor < total, "the killed ingester had stored its share"
    (acquired,) = web.query(
        "SELECT SUM(value) FROM monitor_eventcounter WHERE name = 'lock_owner_changes'"
    )
    assert acquired[0] == len(range(0, total, 10)), "lock_acquired counted once each"
    assert "Traceback" not in web.log("first") + web.log("second")
