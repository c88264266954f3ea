"""Ingest benchmark: events stored per second by 1 and by 2 ingesters
(``manage.py ingest_events``, real processes), on SQLite and on PostgreSQL.

On a private redis-server, the event log is sharded (``SHARDS`` streams, as the
ingesters' ``LOCKSTEP_EVENT_SHARDS``); ``events`` synthetic events (a mix of the types a
busy deployment writes, with their details) are loaded once into staging streams. Each
round: a fresh database (a copy of a migrated SQLite file; a database made from a
migrated template on a private PostgreSQL server), the ingesters started on an empty
event log and left until they have split the streams between them (their leases, as
the assignment says), then every staging stream is copied into its shard in one
``MULTI`` and the clock runs until every shard's cursor in the database has reached the
shard's last entry. The rate is ``events / that time``; the rows are then counted (each
event once). Rounds alternate the ingester counts, so a noisy neighbour slows both
alike; medians are reported, and the ratio of the medians of one run.

PostgreSQL: ``initdb`` and ``pg_ctl`` of the machine's installation on a free port, in a
temporary directory, as the ``postgres`` user when run as root (initdb refuses root);
never the machine's own service. Its settings are the defaults (``fsync`` and
``synchronous_commit`` on): a commit per batch costs what it costs in production.
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Protocol

import redis

from bench.common import ROOT, private_redis, terminate
from lockstep.dashboard.monitor.ingest_leases import LEASE_PREFIX, MEMBERS, PUBLISHER, assign
from lockstep.workers import events as ev
from lockstep.workers import keys
from lockstep.workers.connection import connect
from lockstep.workers.redis_types import entries

SHARDS = 4
# Ten seconds or so of storing per round at the target rate (5,000 a second): long
# enough that start and end effects (a blocked read's 200 ms) are a few per cent.
DEFAULT_EVENTS = 60_000
TOPICS = ("orders", "payments")
QUEUES = 16
STAGING = "bench:ingest:stage:"
CONSUMER = "bench-host:4242:ab12"
# Every shard, whatever the machine: a round that has not caught up after this long failed.
ROUND_TIMEOUT_S = 300.0
SETTLE_TIMEOUT_S = 120.0
# The cursors are polled this often: a few per cent of a round's length, and of a core.
POLL_S = 0.05
# PostgreSQL's own binaries, wherever Debian put them (the first one found on PATH wins).
PG_BIN_DIRS = ("/usr/local/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin")
PG_USER = "postgres"  # the OS user that runs a private server started by root


class Store(Protocol):
    """A database the ingesters write to, made afresh for each round."""

    name: str

    def new_database(self, label: str) -> str:
        """A migrated, empty database; returns its ``DATABASE_URL``."""
        ...

    def cursors(self, url: str) -> dict[str, str]:
        """Every ingest cursor of ``url``: name -> last stored ID."""
        ...

    def counts(self, url: str) -> tuple[int, int]:
        """(rows, distinct stream IDs) of the stored events."""
        ...


def run(
    events: int,
    ingesters: Sequence[int] = (1, 2),
    stores: Sequence[str] = ("sqlite", "postgres"),
    repeats: int = 3,
    batch: int = 1000,
) -> dict[str, Any]:
    """Every store and ingester count, ``repeats`` rounds each; JSON-ready figures."""
    result: dict[str, Any] = {
        "events": events,
        "shards": SHARDS,
        "batch": batch,
        "repeats": repeats,
        "cpus": os.cpu_count(),
        # The machine is shared: how busy it was says how far to trust the figures.
        "load_average_1m_before": round(os.getloadavg()[0], 2),
    }
    with private_redis() as url:
        client = connect(url)
        staged = _stage(client, events)
        for name in stores:
            with _store(name, url) as store:
                result[name] = _measure(client, url, store, staged, ingesters, repeats, batch)
    result["load_average_1m_after"] = round(os.getloadavg()[0], 2)
    return result


def _measure(
    client: redis.Redis,
    redis_url: str,
    store: Store,
    staged: dict[str, str],
    ingesters: Sequence[int],
    repeats: int,
    batch: int,
) -> dict[str, Any]:
    rates: dict[int, list[float]] = {n: [] for n in ingesters}
    per_cpu: dict[int, list[float]] = {n: [] for n in ingesters}
    for r in range(repeats):
        for n in ingesters:  # alternated: both counts meet the same noise
            database = store.new_database(f"r{r}n{n}")
            rate, rate_per_cpu = _round(client, redis_url, store, database, staged, n, batch)
            rates[n].append(rate)
            per_cpu[n].append(rate_per_cpu)
    out: dict[str, Any] = {
        f"ingesters_{n}": {
            "events_per_s_median": round(statistics.median(v)),
            "events_per_s_rounds": [round(x) for x in v],
            "events_per_ingester_cpu_s_median": round(statistics.median(per_cpu[n])),
        }
        for n, v in rates.items()
    }
    if 1 in rates and 2 in rates:
        out["ratio_2_to_1"] = round(statistics.median(rates[2]) / statistics.median(rates[1]), 2)
    return out


# ---- one round ---------------------------------------------------------------------------


def _round(
    client: redis.Redis,
    redis_url: str,
    store: Store,
    database: str,
    staged: dict[str, str],
    ingesters: int,
    batch: int,
) -> tuple[float, float]:
    """Events stored per second by ``ingesters`` processes, from the release of the events
    until every shard's cursor is at its last entry, and the events stored per second of
    the ingesters' own CPU time (user + system) meanwhile: what one ingester stores with a
    core to itself, whatever else the machine was doing (the database's and Redis's CPU
    not included)."""
    _clear_event_log(client)
    env = _env(redis_url, database)
    logs = Path(tempfile.mkdtemp(prefix="lockstep-bench-ingest-"))
    procs = [_start_ingester(env, batch, logs / f"ingester{i}.log") for i in range(ingesters)]
    try:
        _wait_for_the_split(client, ingesters, procs)
        last_ids = {shard: _last_id(client, stage) for shard, stage in staged.items()}
        cpu_before = sum(_cpu_seconds(proc.pid) for proc in procs)
        started = time.monotonic()
        _release(client, staged)
        _wait_for_cursors(store, database, last_ids, procs)
        elapsed = time.monotonic() - started
        cpu = sum(_cpu_seconds(proc.pid) for proc in procs) - cpu_before
    finally:
        for proc in procs:
            terminate(proc)
        shutil.rmtree(logs, ignore_errors=True)
    rows, distinct = store.counts(database)
    total = sum(int(client.xlen(stage)) for stage in staged.values())
    if rows != total or distinct != total:
        raise RuntimeError(f"stored {rows} rows ({distinct} distinct) of {total} events")
    return total / elapsed, total / max(cpu, 0.01)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _env(redis_url: str, database: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "lockstep.dashboard.settings",
        "REDIS_URL": redis_url,
        "CHANNELS_REDIS_URL": redis_url,
        "CELERY_BROKER_URL": redis_url,
        "DATABASE_URL": database,
        "LOCKSTEP_EVENT_SHARDS": str(SHARDS),
        "LOG_LEVEL": "WARNING",
    }


def _start_ingester(env: dict[str, str], batch: int, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "manage.py", "ingest_events", "--batch", str(batch)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _wait_for_the_split(
    client: redis.Redis, ingesters: int, procs: Sequence[subprocess.Popen[bytes]]
) -> None:
    """Until ``ingesters`` members are live and each stream's lease is held by the member
    the assignment gives it to: the measured time is storing, not starting up."""
    streams = ev.event_streams(client, SHARDS)
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() < deadline:
        _check_alive(procs)
        members = sorted(_text(m) for m in client.zrange(MEMBERS, 0, -1))
        holders = [_text(client.get(LEASE_PREFIX + s)) for s in streams]
        expected = {s: m for m in members for s in assign(streams, members, m)}
        if len(members) == ingesters and holders == [expected.get(s) for s in streams]:
            return
        time.sleep(POLL_S)
    raise RuntimeError(f"{ingesters} ingesters did not split the streams")


def _wait_for_cursors(
    store: Store, database: str, last_ids: dict[str, str], procs: Sequence[subprocess.Popen[bytes]]
) -> None:
    deadline = time.monotonic() + ROUND_TIMEOUT_S
    while time.monotonic() < deadline:
        cursors = store.cursors(database)
        if all(cursors.get(shard) == last for shard, last in last_ids.items()):
            return
        _check_alive(procs)
        time.sleep(POLL_S)
    raise RuntimeError("the ingesters did not store every event in time")


def _check_alive(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is not None:
            raise RuntimeError(f"an ingester exited ({proc.returncode})")


# ---- the events ----------------------------------------------------------------------------


def _stage(client: redis.Redis, events: int) -> dict[str, str]:
    """``events`` events appended to one staging stream per shard, each event to its
    shard's (``shard_of``); returns shard stream -> staging stream."""
    staged = {stream: f"{STAGING}{i}" for i, stream in enumerate(ev.shard_streams(SHARDS))}
    for stage in staged.values():
        client.delete(stage)
    pipe = client.pipeline(transaction=False)
    for n in range(events):
        event = _event(n)
        stream = ev.stream_of(event, SHARDS)
        pipe.xadd(staged[stream], event.fields())
        if n % 2000 == 1999:
            pipe.execute()
    pipe.execute()
    return staged


def _event(n: int) -> ev.Event:
    """Event ``n`` of the load: mostly commits and retries, some lock changes and state
    snapshots, each with details of the size the runtime writes."""
    topic, queue = TOPICS[n % len(TOPICS)], (n // len(TOPICS)) % QUEUES
    type_, key, details = _shape(n)
    token = n if type_ == ev.LOCK_ACQUIRED else 7
    ts = 1_700_000_000_000 + n
    return ev.Event(type_, ts, topic, "billing", queue, key, token, CONSUMER, details)


def _shape(n: int) -> tuple[str, str, dict[str, Any]]:
    """Type, key and details of event ``n``: 4 in 10 commits, 3 retries, 2 lock grants, 1
    key-state snapshot."""
    kind = n % 10
    if kind < 4:
        return ev.OFFSET_COMMITTED, "", {"from_offset": n, "offset": n + 40, "commits": 40}
    if kind < 7:
        retry = {
            "offsets": [n, n + 1],
            "reconsume_times": 2,
            "max_reconsume_times": 5,
            "error": "ValueError: the payment service answered 503 Service Unavailable",
            "retry_in_ms": 2000,
            "waiting_behind": 3,
        }
        return ev.CONSUME_FAILED, f"order-{n % 5000}", retry
    if kind < 9:
        return ev.LOCK_ACQUIRED, "", {}
    state = {
        "low_water": n,
        "highest_completed": n + 12,
        "in_flight": 12,
        "flow_paused": False,
        "blocked_keys": [{"key": f"order-{n % 97}", "offset": n, "retries": 1, "waiting": 2}],
        "blocked_count": 1,
        "parked_keys": [],
        "parked_count": 0,
    }
    return ev.KEY_STATE, "", state


def _clear_event_log(client: redis.Redis) -> None:
    ev.delete_event_log(client)
    for key in client.scan_iter(match=LEASE_PREFIX + "*"):
        client.delete(key)
    client.delete(MEMBERS, PUBLISHER)


def _release(client: redis.Redis, staged: dict[str, str]) -> None:
    """Every staged stream into its shard at once (COPY keeps entry IDs and
    ``entries-added``), registered as writers register shards."""
    pipe = client.pipeline(transaction=True)
    pipe.sadd(keys.EVENT_STREAMS, *staged)
    for shard, stage in staged.items():
        pipe.copy(stage, shard, replace=True)
    pipe.execute()


def _last_id(client: redis.Redis, stream: str) -> str:
    last = entries(client.xrevrange(stream, count=1))
    return last[0][0].decode() if last else "0-0"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# ---- the stores ----------------------------------------------------------------------------


@contextmanager
def _store(name: str, redis_url: str) -> Iterator[Store]:
    if name == "sqlite":
        with _sqlite(redis_url) as store:
            yield store
    elif name == "postgres":
        with _postgres(redis_url) as pg:
            yield pg
    else:
        raise ValueError(f"unknown store {name!r}")


def _migrate(redis_url: str, database: str) -> None:
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=_env(redis_url, database),
        check=True,
        capture_output=True,
        timeout=300,
    )


class SqliteStore:
    name = "sqlite"

    def __init__(self, template: Path) -> None:
        self.template = template

    def new_database(self, label: str) -> str:
        path = self.template.with_name(f"{label}.sqlite3")
        shutil.copyfile(self.template, path)
        return f"sqlite:///{path}"

    def cursors(self, url: str) -> dict[str, str]:
        rows = self._query(url, "SELECT name, last_id FROM monitor_ingestcursor")
        return {str(n): str(i) for n, i in rows}

    def counts(self, url: str) -> tuple[int, int]:
        ((rows, distinct),) = self._query(
            url, "SELECT COUNT(*), COUNT(DISTINCT stream_id) FROM monitor_event"
        )
        return int(str(rows)), int(str(distinct))

    @staticmethod
    def _query(url: str, sql: str) -> list[tuple[object, ...]]:
        path = url.removeprefix("sqlite:///")  # an absolute path: sqlite:////tmp/...
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as db:
            return list(db.execute(sql))


@contextmanager
def _sqlite(redis_url: str) -> Iterator[SqliteStore]:
    workdir = Path(tempfile.mkdtemp(prefix="lockstep-bench-sqlite-"))
    try:
        template = workdir / "template.sqlite3"
        _migrate(redis_url, f"sqlite:///{template}")
        with closing(sqlite3.connect(template)) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        yield SqliteStore(template)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


class PostgresStore:
    name = "postgres"

    def __init__(self, port: int) -> None:
        self.port = port
        # One connection per database, kept: the cursors are polled every POLL_S, and a
        # new connection is a new server process each time.
        self._connections: dict[str, Any] = {}

    def close(self) -> None:
        for db in self._connections.values():
            db.close()
        self._connections.clear()

    def url(self, database: str) -> str:
        return f"postgres://{PG_USER}@127.0.0.1:{self.port}/{database}"

    def new_database(self, label: str) -> str:
        self._admin(f'CREATE DATABASE "{label}" TEMPLATE "template_lockstep"')
        return self.url(label)

    def cursors(self, url: str) -> dict[str, str]:
        rows = self._query(url, "SELECT name, last_id FROM monitor_ingestcursor")
        return {str(n): str(i) for n, i in rows}

    def counts(self, url: str) -> tuple[int, int]:
        ((rows, distinct),) = self._query(
            url, "SELECT COUNT(*), COUNT(DISTINCT stream_id) FROM monitor_event"
        )
        return int(str(rows)), int(str(distinct))

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as db:
            db.execute(sql.encode())

    def _query(self, url: str, sql: str) -> list[tuple[object, ...]]:
        import psycopg

        if url not in self._connections:
            self._connections[url] = psycopg.connect(url, autocommit=True)
        return list(self._connections[url].execute(sql.encode()).fetchall())


@contextmanager
def _postgres(redis_url: str) -> Iterator[PostgresStore]:
    """A private PostgreSQL server with a migrated template database."""
    workdir = Path(tempfile.mkdtemp(prefix="lockstep-bench-pg-"))
    data, port = workdir / "data", _free_port()
    as_user = _as_postgres_user(workdir)
    subprocess.run(
        [*as_user, _pg_bin("initdb"), "-D", str(data), "-U", PG_USER, "-A", "trust"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    options = f"-p {port} -k {workdir} -c listen_addresses=127.0.0.1"
    pg_ctl = [*as_user, _pg_bin("pg_ctl"), "-D", str(data), "-l", str(workdir / "log")]
    subprocess.run([*pg_ctl, "-o", options, "-w", "start"], check=True, capture_output=True)
    try:
        store = PostgresStore(port)
        store._admin('CREATE DATABASE "template_lockstep"')
        _migrate(redis_url, store.url("template_lockstep"))
        try:
            yield store
        finally:
            store.close()
    finally:
        subprocess.run([*pg_ctl, "-m", "fast", "-w", "stop"], capture_output=True, check=False)
        shutil.rmtree(workdir, ignore_errors=True)


def _as_postgres_user(workdir: Path) -> list[str]:
    """How to run PostgreSQL's tools: as ourselves, or as ``postgres`` when we are root
    (the temporary directory is then given to that user)."""
    if os.geteuid() != 0:
        return []
    shutil.chown(workdir, PG_USER, PG_USER)
    return ["runuser", "-u", PG_USER, "--"]


def _pg_bin(name: str) -> str:
    for folder in PG_BIN_DIRS:
        path = Path(folder) / name
        if path.exists():
            return str(path)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"PostgreSQL's {name} was not found (apt-get install postgresql)")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
