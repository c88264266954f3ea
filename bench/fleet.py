"""Fleet benchmark (issue #40): the dashboard beside a real fleet, started as in production.

Everything is a subprocess on one private redis-server and a private database (SQLite in
a temporary folder, or a private PostgreSQL: ``bench.ingest``'s stores): ``topics`` x
``queues`` queues read by ``groups_per_topic`` groups each, ``consumers`` ``lockstep
consume`` processes spread over the groups, a producer thread at ``rate`` messages per
second, daphne, ``ingesters`` ingesters, the alert evaluator, a Celery worker and beat
(lag samples every 10 s). After every queue is owned and the first sweep is stored:

1. **pages**: the overview, a group and a queue page (HTML and JSON) and ``/metrics``,
   each fetched ``rounds`` x 5 times, one after another: median / p95 / max seconds and
   bytes;
2. **live** (``minutes``): ``browsers`` sockets open on the overview (as that many browser
   tabs) recording every message's size; a probe group on a topic of its own, whose
   queues get one message every few seconds, watched on a filtered overview socket:
   seconds from the send to the socket showing it committed (a queue change reaching an
   open overview); every second, events appended and stored, the ingest backlog's age,
   CPU and RSS of every process. Daphne's CPU share is over this phase alone (no page
   requests then);
3. **storm** (``storm_minutes``): every consumer of one group killed (SIGKILL); webhook
   POSTs (a local receiver), e-mails (Django's file backend) and alert toasts (the
   alerts socket) counted.

``targets_met`` says, per target of the issue, whether the figure met it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import redis

from bench.common import ROOT, private_redis, rss_mb
from bench.dashboard import _free_port, _percentile, _wait_for_http, login
from bench.ingest import Store, _store
from bench.ws_client import WebSocket
from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.redis_types import as_bytes
from lockstep.workers.refs import QueueRef

PROBE_TOPIC, PROBE_GROUP, PROBE_QUEUES = "probe", "probe", 8
# A probe send every few seconds: longer than the commit-event interval (5 s), so each
# probe's commit is the first of a quiet interval and is written at the next flush.
PROBE_GAP_S = 6.0
PAGE_REPEATS = 5
SETTLE_S = 20.0
HANDLER = "bench.handlers.noop"
TARGETS = {
    "page_p95_s": 0.3,
    "overview_bytes": 200 * 1024,
    "queue_page_p95_s": 0.1,
    "metrics_queue_p95_s": 1.0,
    "socket_message_bytes": 64 * 1024,
    "push_latency_p95_s": 1.5,
    "backlog_age_p99_s": 2.0,
    "web_cpu_share": 0.25,
    "rss_mb": 400,
    "storm_notifications_per_channel": 3,
}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    cpu_ticks: list[tuple[float, int]] = field(default_factory=list)
    peak_rss_mb: int = 0

    def sample(self) -> None:
        if self.popen.poll() is not None:
            return
        self.peak_rss_mb = max(self.peak_rss_mb, rss_mb(self.popen.pid))
        self.cpu_ticks.append((time.monotonic(), _cpu_ticks(self.popen.pid)))

    def cpu_share(self, since: float, until: float) -> float:
        """Cores used between ``since`` and ``until`` (1.0: one core busy)."""
        inside = [(t, c) for t, c in self.cpu_ticks if since <= t <= until]
        if len(inside) < 2:
            return 0.0
        (t0, c0), (t1, c1) = inside[0], inside[-1]
        return round((c1 - c0) / CLOCK_TICKS / max(1e-9, t1 - t0), 3)


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])  # utime, stime


# ---- the run ---------------------------------------------------------------------------


def run(
    topics: int,
    queues: int,
    groups_per_topic: int,
    consumers: int,
    rate: float,
    store: str = "sqlite",
    ingesters: int = 1,
    rounds: int = 3,
    minutes: float = 2.0,
    storm_minutes: float = 5.0,
    browsers: int = 5,
) -> dict[str, Any]:
    if consumers < topics * groups_per_topic:
        raise ValueError("every group needs a consumer: --consumers >= topics x groups")
    started = time.monotonic()
    names = [f"fleet-{t}" for t in range(topics)]
    groups = [(t, f"g{g}") for t in names for g in range(groups_per_topic)]
    result: dict[str, Any] = {
        "topics": topics,
        "queues": queues,
        "groups_per_topic": groups_per_topic,
        "pairs": topics * queues * groups_per_topic,
        "consumers": consumers,
        "rate": rate,
        "store": store,
        "ingesters": ingesters,
    }
    with private_redis() as url, _store(store, url) as db, _workdir() as tmp:
        client = redis.Redis.from_url(url)
        for name in names:
            create_topic(client, name, queues)
        create_topic(client, PROBE_TOPIC, PROBE_QUEUES)
        with _Fleet(url, db, tmp, ingesters) as fleet:
            fleet.start_web_side()
            for n in range(consumers):
                topic, group = groups[n % len(groups)]
                fleet.start_consumer(f"consumer-{n}", topic, group)
            fleet.start_consumer("consumer-probe", PROBE_TOPIC, PROBE_GROUP)
            producer = _SteadyProducer(url, names, rate, fleet.log)
            producer.start()
            try:
                result["owned_after_s"] = _wait_until_owned(client, fleet, names, groups, queues)
                fleet.wait_for_the_fleet_state(result["pairs"])
                time.sleep(SETTLE_S)
                cookie = login(fleet.base, fleet.user, fleet.password)
                result["pages"] = _pages(fleet, cookie, groups[0], rounds)
                result.update(asyncio.run(_live(fleet, cookie, client, minutes, browsers)))
                result["storm"] = asyncio.run(_storm(fleet, cookie, groups[-1], storm_minutes))
            finally:
                producer.stop()
            result["produced_per_s"] = round(producer.rate(), 1)
            result["processes"] = fleet.process_figures()
            result["lag_samples_stored"] = int(
                str(
                    fleet.query("SELECT COUNT(*) FROM monitor_event WHERE type = 'lag_sampled'")[0][
                        0
                    ]
                )
            )
            result["log"] = fleet.keep_log()
        client.close()
    result["targets"] = TARGETS
    result["targets_met"] = _targets_met(result)
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    return result


@contextlib.contextmanager
def _workdir() -> Iterator[Path]:
    import shutil

    path = Path(tempfile.mkdtemp(prefix="lockstep-bench-fleet-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# ---- the processes ---------------------------------------------------------------------


class _Fleet:
    """The web side and the consumers as subprocesses; stopped (SIGTERM) on exit."""

    def __init__(self, url: str, db: Store, tmp: Path, ingesters: int) -> None:
        self.url, self.tmp, self.ingesters = url, tmp, ingesters
        self.database = db.new_database("fleet")
        self.store = db
        self.user, self.password = "bench", secrets.token_urlsafe(12)
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.hooks = _HookReceiver()
        self.mail = tmp / "mail"
        self.mail.mkdir()
        self.procs: dict[str, Proc] = {}
        self.consumers: dict[str, tuple[str, str]] = {}
        self.log = open(tmp / "fleet.log", "wb")  # noqa: SIM115 (closed in __exit__)

    def __enter__(self) -> _Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs.values():
            if proc.popen.poll() is None:
                proc.popen.terminate()
        for proc in self.procs.values():
            try:
                proc.popen.wait(20)
            except subprocess.TimeoutExpired:
                proc.popen.kill()
        self.hooks.close()
        self.log.close()

    def env(self) -> dict[str, str]:
        shards = str(4 * self.ingesters) if self.ingesters > 1 else "1"
        return {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "lockstep.dashboard.settings",
            "REDIS_URL": self.url,
            "CHANNELS_REDIS_URL": self.url,
            "CELERY_BROKER_URL": self.url,
            "DATABASE_URL": self.database,
            "LOG_LEVEL": "WARNING",
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DEMO_ADMIN_USER": self.user,
            "DEMO_ADMIN_PASSWORD": self.password,
            "LOCKSTEP_EVENT_SHARDS": shards,
            "LOCKSTEP_ALERT_WEBHOOKS": json.dumps([{"url": self.hooks.url}]),
            # environ drops one slash of a path after "filemail://": four keep it absolute.
            "EMAIL_URL": f"filemail:///{self.mail}",
            "LOCKSTEP_ALERT_EMAIL_TO": "ops@example.com",
        }

    def start(self, name: str, command: list[str]) -> None:
        popen = subprocess.Popen(
            command, cwd=ROOT, env=self.env(), stdout=self.log, stderr=subprocess.STDOUT
        )
        self.procs[name] = Proc(name, popen)

    def start_web_side(self) -> None:
        manage = [sys.executable, "manage.py"]
        subprocess.run(
            [*manage, "bootstrap_demo"], cwd=ROOT, env=self.env(), check=True, capture_output=True
        )
        daphne = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port)]
        self.start("web", [*daphne, "lockstep.dashboard.asgi:application"])
        for n in range(self.ingesters):
            self.start(f"ingester-{n}", [*manage, "ingest_events"])
        self.start("alerts", [*manage, "alerts", "run"])
        celery = [sys.executable, "-m", "celery", "-A", "lockstep.dashboard.celery"]
        worker = ["worker", "--pool", "solo", "--loglevel", "WARNING", "-n", "fleet@%h"]
        self.start("worker", [*celery, *worker])
        self.start("beat", [*celery, "beat", "--loglevel", "WARNING", "-s", str(self.tmp / "beat")])
        _wait_for_http(f"{self.base}/login/", self.procs["web"].popen, timeout=120)

    def start_consumer(self, name: str, topic: str, group: str) -> None:
        command = [sys.executable, "-m", "lockstep", "consume", "--topic", topic]
        self.start(name, [*command, "--group", group, "--handler", HANDLER])
        self.consumers[name] = (topic, group)

    def kill_group(self, topic: str, group: str) -> int:
        killed = 0
        for name, where in self.consumers.items():
            if where == (topic, group) and self.procs[name].popen.poll() is None:
                self.procs[name].popen.kill()
                killed += 1
        return killed

    def sample(self) -> None:
        for proc in self.procs.values():
            proc.sample()

    def wait_for_the_fleet_state(self, pairs: int, timeout: float = 600.0) -> None:
        """Until the fleet state holds a row for every pair (the ingester's first sweep)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = self.query("SELECT COUNT(*) FROM monitor_queuestatus WHERE topic <> 'probe'")
            if int(str(rows[0][0])) >= pairs:
                return
            self.sample()
            time.sleep(1)
        raise TimeoutError("the fleet state never held every pair")

    def query(self, sql: str) -> list[tuple[object, ...]]:
        return self.store._query(self.database, sql)  # type: ignore[attr-defined]

    def keep_log(self) -> str:
        """A copy of every process's output, kept after the run (its folder is removed)."""
        import shutil

        self.log.flush()
        kept = Path(tempfile.gettempdir()) / "lockstep-bench-fleet-last.log"
        shutil.copyfile(self.tmp / "fleet.log", kept)
        return str(kept)

    def process_figures(self) -> dict[str, Any]:
        """Peak RSS of each process, and consumers summed."""
        figures = {n: {"peak_rss_mb": p.peak_rss_mb} for n, p in self.procs.items()}
        return {
            **{n: f for n, f in figures.items() if not n.startswith("consumer-")},
            "consumers_peak_rss_mb_max": max(
                (f["peak_rss_mb"] for n, f in figures.items() if n.startswith("consumer-")),
                default=0,
            ),
        }


# A producer process sends at most this many messages a second (a send is a round trip:
# one process reaches about twice this on a loaded machine); more are split over several.
PER_PRODUCER = 400


class _SteadyProducer:
    """``rate`` messages a second over the fleet's topics, random keys, from as many
    producer processes as that takes (``python -m bench.fleet produce``), each pacing its
    own share; ``sent`` is read back from Redis (the sum of the topics' max offsets)."""

    def __init__(self, url: str, topics: list[str], rate: float, log: Any) -> None:
        self.url, self.topics, self.rate_per_s, self.log = url, topics, rate, log
        self.procs: list[subprocess.Popen[bytes]] = []
        self._began = time.monotonic()
        self._before = 0

    def start(self) -> None:
        count = max(1, math.ceil(self.rate_per_s / PER_PRODUCER))
        self._before = self._total()
        self._began = time.monotonic()
        for n in range(count):
            command = [sys.executable, "-m", "bench.fleet", "produce", self.url]
            command += [str(self.rate_per_s / count), str(n), *self.topics]
            self.procs.append(
                subprocess.Popen(command, cwd=ROOT, env=_env(), stdout=self.log, stderr=self.log)
            )

    def stop(self) -> None:
        self._elapsed = time.monotonic() - self._began
        self._sent = self._total() - self._before
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            proc.wait(20)

    def rate(self) -> float:
        return self._sent / max(1e-9, self._elapsed)

    def _total(self) -> int:
        client = redis.Redis.from_url(self.url)
        try:
            total = 0
            for topic in self.topics:
                count = int(client.hget(keys.topic_meta(topic), "queues") or 0)
                pipe = client.pipeline(transaction=False)
                for q in range(count):
                    pipe.get(keys.sequence(QueueRef(topic, q)))
                total += sum(int(v or 0) for v in pipe.execute())
            return total
        finally:
            client.close()


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def produce_main(url: str, rate: float, seed: int, topics: list[str]) -> None:
    """One producer process: ``rate`` messages a second, paced, until terminated."""
    producer = Producer(url)
    rng = random.Random(seed)
    began, sent = time.monotonic(), 0
    while True:
        wait = began + sent / rate - time.monotonic()
        if wait > 0:
            time.sleep(wait)
            continue
        producer.send(rng.choice(topics), f"k-{rng.randrange(1_000_000)}", b"{}")
        sent += 1


def _wait_until_owned(
    client: redis.Redis,
    fleet: _Fleet,
    topics: list[str],
    groups: list[tuple[str, str]],
    queues: int,
    timeout: float = 900.0,
) -> float:
    """Seconds until every (topic, group, queue) has a live lock."""
    started = time.monotonic()
    cells = [(QueueRef(t, q), g) for t, g in groups for q in range(queues)]
    while time.monotonic() - started < timeout:
        fleet.sample()
        now_ms = int(client.time()[0]) * 1000
        pipe = client.pipeline(transaction=False)
        for ref, group in cells:
            pipe.hget(keys.lock(ref, group), "expires_at")
        owned = sum(1 for v in pipe.execute() if v is not None and int(v) > now_ms)
        if owned == len(cells):
            return round(time.monotonic() - started, 1)
        time.sleep(2)
    raise TimeoutError("not every queue was owned in time")


# ---- 1. pages --------------------------------------------------------------------------


def _pages(
    fleet: _Fleet, cookie: str, where: tuple[str, str], rounds: int
) -> dict[str, dict[str, float]]:
    topic, group = where
    queue = 3
    urls = {
        "overview_html": "/",
        "overview_json": "/api/v1/overview",
        "group_html": f"/topics/{topic}/groups/{group}",
        "group_json": f"/api/v1/topics/{topic}/groups/{group}",
        "queue_html": f"/topics/{topic}/queues/{queue}",
        "queue_json": f"/api/v1/topics/{topic}/queues/{queue}",
        "metrics": "/metrics",
    }
    times: dict[str, list[float]] = {name: [] for name in urls}
    sizes: dict[str, list[int]] = {name: [] for name in urls}
    for _ in range(rounds):
        for name, path in urls.items():
            for _ in range(PAGE_REPEATS):
                seconds, size = _get(fleet.base + path, cookie)
                times[name].append(seconds)
                sizes[name].append(size)
                fleet.sample()
    return {name: _summary(times[name], sizes[name]) for name in urls}


def _get(url: str, cookie: str) -> tuple[float, int]:
    request = urllib.request.Request(url, headers={"Cookie": cookie})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
    return time.perf_counter() - started, len(body)


def _summary(times: list[float], sizes: list[int]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "median_s": round(statistics.median(ordered), 4),
        "p95_s": round(_percentile(ordered, 0.95), 4),
        "max_s": round(ordered[-1], 4),
        "bytes": max(sizes),
    }


# ---- 2. live: sockets, push latency, ingest ---------------------------------------------


async def _live(
    fleet: _Fleet, cookie: str, client: redis.Redis, minutes: float, browsers: int
) -> dict[str, Any]:
    origin = {"Cookie": cookie, "Origin": fleet.base}
    ws_base = f"ws://127.0.0.1:{fleet.port}"
    sizes: list[int] = []
    overview = [await WebSocket.connect(f"{ws_base}/ws/overview/", origin) for _ in range(browsers)]
    probe = await WebSocket.connect(
        f"{ws_base}/ws/overview/?topic={PROBE_TOPIC}&group={PROBE_GROUP}", origin
    )
    rows: dict[int, int] = {}  # probe queue -> committed offset as the socket last showed
    seen_at: dict[tuple[int, int], float] = {}

    async def read_overview(ws: WebSocket) -> None:
        while True:
            sizes.append(len((await ws.recv_text()).encode()))

    async def read_probe() -> None:
        while True:
            text = await probe.recv_text()
            sizes.append(len(text.encode()))
            for row in json.loads(text).get("rows", []):
                rows[row["queue"]] = row["committed_offset"]
                seen_at.setdefault((row["queue"], row["committed_offset"]), time.monotonic())

    readers = [asyncio.create_task(read_overview(ws)) for ws in overview]
    readers.append(asyncio.create_task(read_probe()))
    samples: list[dict[str, float]] = []
    latencies: list[float] = []
    committed: list[float | None] = []
    stored: list[float | None] = []
    missed = 0
    producer = Producer(fleet.url)
    started = time.monotonic()
    next_probe = started
    queue = 0
    try:
        while time.monotonic() - started < minutes * 60:
            fleet.sample()
            samples.append(_ingest_sample(fleet, client))
            if time.monotonic() >= next_probe:
                sent_at = time.monotonic()
                offset = producer.send(PROBE_TOPIC, _key_on(queue), b"{}").offset
                wanted = offset + 1
                stages = _ProbeStages(fleet, client, queue, wanted, sent_at)
                latency = await _probe_seen(rows, stages, timeout=10.0)
                if latency is None:
                    missed += 1
                else:
                    latencies.append(latency)
                    committed.append(stages.committed_s)
                    stored.append(stages.stored_s)
                queue = (queue + 1) % PROBE_QUEUES
                next_probe = sent_at + PROBE_GAP_S
            await asyncio.sleep(1.0)
    finally:
        producer.close()
        finished = time.monotonic()
        for task in readers:
            task.cancel()
        for ws in [*overview, probe]:
            with contextlib.suppress(Exception):
                await ws.close()
    latencies.sort()
    return {
        "socket_message_max_bytes": max(sizes, default=0),
        "socket_messages": len(sizes),
        "push_latency_p50_s": round(_percentile(latencies, 0.5), 3) if latencies else None,
        "push_latency_p95_s": round(_percentile(latencies, 0.95), 3) if latencies else None,
        "push_latency_samples": len(latencies),
        # Where the time goes, medians: the send to the consumer's commit in Redis, and to
        # the fleet state's row showing it (the rest is the push and the socket's re-read).
        "push_latency_stages_p50_s": {
            "committed": _median_of(committed),
            "fleet_state": _median_of(stored),
        },
        "push_latency_missed": missed,
        "ingest": _ingest_figures(samples),
        "cpu_share_live": {
            name: proc.cpu_share(started, finished)
            for name, proc in fleet.procs.items()
            if not name.startswith("consumer-")
        },
        "consumers_cpu_share_live": round(
            sum(
                p.cpu_share(started, finished)
                for n, p in fleet.procs.items()
                if n.startswith("consumer-")
            ),
            3,
        ),
    }


@dataclass
class _ProbeStages:
    """One probe's way to the socket: when the consumer's commit reached Redis and when
    the fleet state's row showed it, in seconds after the send (None: not seen)."""

    fleet: _Fleet
    client: redis.Redis
    queue: int
    wanted: int
    sent_at: float
    committed_s: float | None = None
    stored_s: float | None = None

    def poll(self) -> None:
        now = time.monotonic() - self.sent_at
        if self.committed_s is None:
            ref = QueueRef(PROBE_TOPIC, self.queue)
            if (
                int(self.client.hget(keys.offset(ref, PROBE_GROUP), "committed") or 0)
                >= self.wanted
            ):
                self.committed_s = round(now, 3)
        if self.stored_s is None:
            sql = (
                "SELECT committed_offset FROM monitor_queuestatus WHERE topic = "
                f"'{PROBE_TOPIC}' AND queue = {self.queue}"
            )
            found = self.fleet.query(sql)
            if found and int(str(found[0][0])) >= self.wanted:
                self.stored_s = round(now, 3)


async def _probe_seen(rows: dict[int, int], stages: _ProbeStages, timeout: float) -> float | None:
    while time.monotonic() - stages.sent_at < timeout:
        if rows.get(stages.queue, -1) >= stages.wanted:
            return time.monotonic() - stages.sent_at
        stages.poll()
        await asyncio.sleep(0.02)
    return None


def _median_of(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 3) if known else None


def _key_on(queue: int) -> str:
    from lockstep.workers.hashing import queue_for_key

    n = 0
    while queue_for_key(f"probe-{n}", PROBE_QUEUES) != queue:
        n += 1
    return f"probe-{n}"


def _ingest_sample(fleet: _Fleet, client: redis.Redis) -> dict[str, float]:
    """Entries ever appended to the event streams, events stored, the backlog's age."""
    now_ms = int(client.time()[0]) * 1000
    cursors = {
        str(n): str(i) for n, i in fleet.query("SELECT name, last_id FROM monitor_ingestcursor")
    }
    stored = int(str(fleet.query("SELECT COALESCE(MAX(id), 0) FROM monitor_event")[0][0]))
    appended, age_ms = 0, 0
    for stream in _streams(client):
        info = client.xinfo_stream(stream)
        appended += int(info.get("entries-added", 0))
        name = "events" if stream == keys.EVENTS else stream
        after = cursors.get(name, "0-0")
        pending = client.xrange(stream, min=f"({after}", max="+", count=1)
        if pending:
            first_ms = int(as_bytes(pending[0][0]).decode().split("-")[0])
            age_ms = max(age_ms, now_ms - first_ms)
    return {"t": time.monotonic(), "appended": appended, "stored": stored, "age_s": age_ms / 1000}


def _streams(client: redis.Redis) -> list[str]:
    found = [keys.EVENTS] if client.exists(keys.EVENTS) else []
    for key in client.scan_iter(match=f"{keys.EVENTS}:*", count=1000):
        found.append(key.decode())
    return found


def _ingest_figures(samples: list[dict[str, float]]) -> dict[str, Any]:
    if len(samples) < 2:
        return {}
    span = samples[-1]["t"] - samples[0]["t"]
    ages = sorted(s["age_s"] for s in samples)
    return {
        "appended_per_s": round((samples[-1]["appended"] - samples[0]["appended"]) / span, 1),
        "stored_per_s": round((samples[-1]["stored"] - samples[0]["stored"]) / span, 1),
        "backlog_age_p99_s": round(_percentile(ages, 0.99), 3),
        "backlog_age_max_s": round(ages[-1], 3),
    }


# ---- 3. the storm ----------------------------------------------------------------------


async def _storm(
    fleet: _Fleet, cookie: str, where: tuple[str, str], minutes: float
) -> dict[str, Any]:
    origin = {"Cookie": cookie, "Origin": fleet.base}
    alerts = await WebSocket.connect(f"ws://127.0.0.1:{fleet.port}/ws/alerts/", origin)
    toasts: list[dict[str, Any]] = []

    async def read() -> None:
        while True:
            message = json.loads(await alerts.recv_text())
            toasts.extend(message.get("opened") or [])  # one toast per brief

    reader = asyncio.create_task(read())
    hooks_before, mails_before = len(fleet.hooks.bodies), _mail_count(fleet.mail)
    killed = fleet.kill_group(*where)
    started = time.monotonic()
    while time.monotonic() - started < minutes * 60:
        fleet.sample()
        await asyncio.sleep(2)
    reader.cancel()
    with contextlib.suppress(Exception):
        await alerts.close()
    bodies = fleet.hooks.bodies[hooks_before:]
    return {
        "group": f"{where[0]}/{where[1]}",
        "consumers_killed": killed,
        "minutes": minutes,
        "webhook": len(bodies),
        "email": _mail_count(fleet.mail) - mails_before,
        "toasts": len(toasts),
        "webhook_counts": [_count_of(b) for b in bodies],
    }


def _count_of(body: dict[str, Any]) -> Any:
    group = body.get("group") or {}
    return {"rule": (body.get("alert") or {}).get("rule"), "count": group.get("count")}


def _mail_count(folder: Path) -> int:
    return sum(1 for _ in folder.iterdir()) if folder.exists() else 0


class _HookReceiver:
    """A local HTTP server that keeps every JSON body POSTed to it."""

    def __init__(self) -> None:
        bodies: list[dict[str, Any]] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                with contextlib.suppress(ValueError):
                    bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.bodies = bodies
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


# ---- targets ---------------------------------------------------------------------------


def _targets_met(result: dict[str, Any]) -> dict[str, bool | None]:
    pages = result.get("pages", {})
    ingest = result.get("ingest", {})
    cpu = result.get("cpu_share_live", {})
    storm = result.get("storm", {})
    rss = [f["peak_rss_mb"] for f in result.get("processes", {}).values() if isinstance(f, dict)]
    rss.append(result.get("processes", {}).get("consumers_peak_rss_mb_max", 0))
    page_names = ("overview_html", "overview_json", "group_html", "group_json")
    push = result.get("push_latency_p95_s")
    return {
        "pages_p95": all(pages[n]["p95_s"] <= TARGETS["page_p95_s"] for n in page_names),
        "overview_bytes": pages["overview_html"]["bytes"] <= TARGETS["overview_bytes"],
        "queue_pages_p95": all(
            pages[n]["p95_s"] <= TARGETS["queue_page_p95_s"] for n in ("queue_html", "queue_json")
        ),
        "metrics_p95": pages["metrics"]["p95_s"] <= TARGETS["metrics_queue_p95_s"],
        "socket_message_bytes": result["socket_message_max_bytes"]
        <= TARGETS["socket_message_bytes"],
        "push_latency_p95": push is not None and push <= TARGETS["push_latency_p95_s"],
        "backlog_age_p99": ingest.get("backlog_age_p99_s", 1e9) <= TARGETS["backlog_age_p99_s"],
        "web_cpu": cpu.get("web", 1.0) <= TARGETS["web_cpu_share"],
        "rss": max(rss) <= TARGETS["rss_mb"],
        "storm": max(storm.get("webhook", 99), storm.get("email", 99), storm.get("toasts", 99))
        <= TARGETS["storm_notifications_per_channel"],
    }


if __name__ == "__main__":
    if len(sys.argv) >= 6 and sys.argv[1] == "produce":
        produce_main(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), sys.argv[5:])
    else:
        sys.exit("usage: python -m bench.fleet produce URL RATE SEED TOPIC...")
