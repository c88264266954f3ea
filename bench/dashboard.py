"""Dashboard benchmark: what the event log and the live dashboard cost and deliver.

All on one private redis-server; every process is a subprocess as in production.

- **Events on vs off**: one consumer process (no-op handler, 8 queues) with the event log
  on and with ``--no-events``, in alternating order, under queue ordering (batch 32) and
  key ordering (16 lanes); rates from the handler's first completion to its last
  (``ordering.consume_case``), medians reported. Target: on >= 0.95 x off.
- **Ingest rate**: N runtime-shaped events pre-filled in ``ls:events``, then the
  ingester's own loop (``Ingester.run_once`` + pushes, batches of 1,000) on a fresh
  SQLite database in a subprocess, timed until all are stored.
- **Push latency**: daphne and ``manage.py ingest_events`` (default push interval,
  0.5 s) running, one consumer working through a backlog flat out (queue ordering,
  batch 1: many commits, many events), a WebSocket client logged in through the login
  form and subscribed to one queue. Marker events (unique keys) are appended to
  ``ls:events`` at random intervals; latency = marker appended → the client received a
  queue update listing it. Target: p95 ≤ 1 s.

Django is imported only inside the ingest subprocess (``python -m
bench.dashboard ingest N``): ``workers`` must not need Django to import.
"""

from __future__ import annotations

import asyncio
import http.client
import http.cookiejar
import itertools
import json
import math
import os
import random
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis

from bench.common import ROOT, ConsumerProcess, committed_total, load_topic, private_redis
from bench.ordering import consume_case
from bench.ws_client import WebSocket
from lockstep.workers import events as ev

QUEUES = 8
KEY_COUNT = 4000
CHECKED_NOOP = "bench.handlers.checked_noop"
NOOP = "bench.handlers.noop"
EVENT_CASES = {
    "queue_batch32": ["--ordering", "queue", "--batch-size", "32"],
    "key_lanes16": ["--ordering", "key", "--lanes", "16"],
}
PRIMARY_CASE = "queue_batch32"
# Markers every 0.15-0.35 s: several per push interval, at random phases of it.
MARKER_GAP_S = (0.15, 0.35)
MARKER_TIMEOUT_S = 5.0  # well above the 1 s p95 target: a later push counts as missed
LATENCY_BACKLOG = 400_000  # more than a batch-1 consumer finishes during the measurement

TARGETS = {"events_on_off_ratio": 0.95, "push_latency_p95_s": 1.0}


def run(
    messages: int = 200_000,
    repeats: int = 5,
    ingest_events: int = 50_000,
    latency_seconds: float = 20.0,
) -> dict[str, Any]:
    started = time.monotonic()
    result: dict[str, Any] = {"queues": QUEUES, "messages": messages, "repeats": repeats}
    with private_redis() as url:
        result.update(events_on_off(url, messages, repeats))
        result.update(ingest_rate(url, ingest_events))
        try:
            result.update(push_latency(url, latency_seconds))
        except DashboardDidNotStart as exc:
            return {**result, "error": str(exc)}
    result["targets"] = TARGETS
    result["targets_met"] = {
        "events_on_off_ratio": result["events_on_off_ratio_raw"] >= TARGETS["events_on_off_ratio"],
        "push_latency_p95_s": result["push_latency_p95_s"] <= TARGETS["push_latency_p95_s"],
    }
    del result["events_on_off_ratio_raw"]
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    return result


# ---- events on vs off ------------------------------------------------------------------


def events_on_off(url: str, messages: int, repeats: int) -> dict[str, Any]:
    client = redis.Redis.from_url(url)
    load_topic(client, "events", QUEUES, messages, key_count=KEY_COUNT)
    cases: dict[str, Any] = {}
    violations = 0
    for case, args in EVENT_CASES.items():
        runs: dict[str, list[float]] = {"on": [], "off": []}
        for r in range(repeats):
            # Alternate which goes first, so drift (heat, caches) hits both alike.
            order = ("on", "off") if r % 2 == 0 else ("off", "on")
            for mode in order:
                extra = ["--no-events"] if mode == "off" else []
                stats = consume_case(
                    url,
                    "events",
                    f"{case}-{mode}-{r}",
                    QUEUES,
                    messages,
                    CHECKED_NOOP,
                    [*args, *extra],
                )
                runs[mode].append(stats["rate"])
                violations += stats["violations"]
        on, off = statistics.median(runs["on"]), statistics.median(runs["off"])
        # Each on run next to its off run: the pairs see the same machine load.
        pairs = [a / b for a, b in zip(runs["on"], runs["off"], strict=True)]
        cases[case] = {
            "on_msgs_per_s": round(on),
            "off_msgs_per_s": round(off),
            "ratio": round(on / off, 3),
            "ratio_raw": on / off,
            "median_pair_ratio": round(statistics.median(pairs), 3),
            "pair_ratios": [round(x, 3) for x in pairs],
            "on_runs": [round(x) for x in runs["on"]],
            "off_runs": [round(x) for x in runs["off"]],
        }
    primary = cases[PRIMARY_CASE]
    out = {
        "events_on_msgs_per_s": primary["on_msgs_per_s"],
        "events_off_msgs_per_s": primary["off_msgs_per_s"],
        "events_on_off_ratio": primary["ratio"],
        "events_on_off_ratio_raw": primary["ratio_raw"],
        "events_cases": cases,
        "events_order_violations": violations,
    }
    for case in cases.values():
        del case["ratio_raw"]
    client.close()
    return out


# ---- ingest rate -----------------------------------------------------------------------


def fill_events(client: redis.Redis, count: int) -> None:
    """``count`` events shaped like the runtime's, in its proportions: mostly coalesced
    commits, some retries, lock changes, key-state snapshots and lag samples."""
    ev.delete_event_log(client)
    rng = random.Random(7)
    chunk: list[ev.Event] = []
    now_ms = int(time.time() * 1000)
    for i in range(count):
        q, roll = i % QUEUES, rng.random()
        common: dict[str, Any] = {
            "topic": "orders",
            "group": "mailer",
            "queue": q,
            "consumer": "host@123@abcdef",
            "token": 3,
        }
        if roll < 0.7:
            event = ev.Event(
                ev.OFFSET_COMMITTED,
                now_ms,
                **common,
                details={"from_offset": i, "offset": i + 12, "commits": 12},
            )
        elif roll < 0.8:
            event = ev.Event(
                ev.CONSUME_FAILED,
                now_ms,
                key=f"order-{i}",
                **common,
                details={
                    "offsets": [i],
                    "reconsume_times": 2,
                    "error": "TimeoutError: upstream",
                    "retry_in_ms": 4000,
                },
            )
        elif roll < 0.85:
            event = ev.Event(ev.LOCK_ACQUIRED, now_ms, **common, details={"expires_in_ms": 60000})
        elif roll < 0.95:
            event = ev.Event(
                ev.KEY_STATE,
                now_ms,
                **common,
                details={
                    "low_water": i,
                    "highest_completed": i + 40,
                    "in_flight": 37,
                    "blocked_keys": [
                        {
                            "key": f"order-{k}",
                            "offset": i + k,
                            "retries": 3,
                            "waiting": 4,
                            "error": "boom",
                        }
                        for k in range(5)
                    ],
                },
            )
        else:
            event = ev.Event(
                ev.LAG_SAMPLED,
                now_ms,
                **common,
                details={
                    "max_offset": i + 100,
                    "committed_offset": i,
                    "lag": 100,
                    "time_lag_s": 1.5,
                },
            )
        chunk.append(event)
        if i % 2000 == 1999:
            _append_uncapped(client, chunk, count)
            chunk = []
    _append_uncapped(client, chunk, count)


def _append_uncapped(client: redis.Redis, events: list[ev.Event], total: int) -> None:
    """To the event log's shards (``LOCKSTEP_EVENT_SHARDS``), never trimming the fill."""
    ev.append(client, events, maxlen=max(total, 1_000_000))


def ingest_rate(url: str, count: int) -> dict[str, Any]:
    client = redis.Redis.from_url(url)
    fill_events(client, count)
    client.close()
    with _workdir() as tmp:
        env = _django_env(url, tmp)
        done = subprocess.run(
            [sys.executable, "-m", "bench.dashboard", "ingest", str(count)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    if done.returncode != 0:
        raise RuntimeError(f"ingest benchmark failed:\n{done.stderr[-3000:]}")
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "ingest_events": measured["stored"],
        "ingest_seconds": round(measured["seconds"], 2),
        "ingest_events_per_s": round(measured["stored"] / measured["seconds"]),
    }


def _ingest_main(total: int) -> None:
    """In the subprocess: migrate a fresh database, then time the ingester's loop."""
    import django

    django.setup()
    from django.core.management import call_command

    from lockstep.dashboard.monitor.ingest import Ingester
    from lockstep.dashboard.web.redis_conn import get_redis
    from lockstep.dashboard.web.store.models import Event

    call_command("migrate", verbosity=0, interactive=False)
    ingester = Ingester(get_redis())
    started = time.perf_counter()
    while ingester.stored < total:
        ingester.run_once(block_ms=100)
        ingester.maybe_push()
    seconds = time.perf_counter() - started
    print(json.dumps({"stored": Event.objects.count(), "seconds": seconds}))


# ---- push latency ----------------------------------------------------------------------


def push_latency(url: str, seconds: float) -> dict[str, Any]:
    client = redis.Redis.from_url(url)
    ev.delete_event_log(client)
    load_topic(client, "latency", QUEUES, LATENCY_BACKLOG, key_count=KEY_COUNT)
    user, password = "bench", secrets.token_urlsafe(12)
    with _workdir() as tmp, _web_side(url, tmp, user, password) as port:
        cookie = login(f"http://127.0.0.1:{port}", user, password)
        consumer = ConsumerProcess(url, "latency", "bench", ["--handler", NOOP])
        try:
            _wait_for_progress(client, consumer)
            before = committed_total(client, "latency", "bench", QUEUES)
            t0 = time.monotonic()
            measured = asyncio.run(_watch(port, cookie, client, "latency", 0, seconds))
            done = committed_total(client, "latency", "bench", QUEUES)
            rate = (done - before) / (time.monotonic() - t0)
            consumer.sample()
        finally:
            consumer.stop()
    latencies = sorted(measured["latencies"])
    client.close()
    if not latencies:
        raise RuntimeError("no marker reached the socket client")
    return {
        "push_latency_p50_s": round(_percentile(latencies, 0.50), 3),
        "push_latency_p95_s": round(_percentile(latencies, 0.95), 3),
        "push_latency_max_s": round(latencies[-1], 3),
        "push_latency_samples": len(latencies),
        "push_latency_missed": measured["missed"],
        "push_seq_gaps": measured["gaps"],
        "push_updates_received": measured["updates"],
        "push_consumer_msgs_per_s": round(rate),
        "push_consumer_busy_throughout": done < LATENCY_BACKLOG,
    }


async def _watch(
    port: int, cookie: str, client: redis.Redis, topic: str, queue: int, seconds: float
) -> dict[str, Any]:
    """Append markers while a socket client watches the queue; when did each show up?"""
    origin = f"http://127.0.0.1:{port}"
    ws = await WebSocket.connect(
        f"ws://127.0.0.1:{port}/ws/queues/{topic}/{queue}/", {"Cookie": cookie, "Origin": origin}
    )
    first = json.loads(await ws.recv_text())
    if first.get("seq") != 0:
        raise RuntimeError(f"expected the seq-0 snapshot, got {first}")
    emitted: dict[str, float] = {}
    seen: dict[str, float] = {}
    seqs: list[int] = []

    async def read() -> None:
        while True:
            message = json.loads(await ws.recv_text())
            now = time.monotonic()
            seqs.append(int(message["seq"]))
            for event in message.get("events", []):
                marker = event.get("key", "")
                if marker in emitted and marker not in seen:
                    seen[marker] = now

    reader = asyncio.create_task(read())
    rng = random.Random(11)
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        marker = f"bench-marker-{n}"
        emitted[marker] = time.monotonic()
        ev.append(
            client,
            [ev.Event("bench_marker", int(time.time() * 1000), topic, "bench", queue, marker)],
        )
        n += 1
        await asyncio.sleep(rng.uniform(*MARKER_GAP_S))
    await asyncio.sleep(MARKER_TIMEOUT_S)
    reader.cancel()
    await ws.close()
    if reader.done() and not reader.cancelled() and reader.exception():
        raise RuntimeError("socket reader failed") from reader.exception()
    gaps = sum(1 for a, b in itertools.pairwise(seqs) if b != a + 1)
    return {
        "latencies": [seen[m] - emitted[m] for m in seen],
        "missed": len(emitted) - len(seen),
        "gaps": gaps,
        "updates": len(seqs),
    }


def login(base: str, user: str, password: str) -> str:
    """Log in through the login form as a browser does; returns the Cookie header value."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(f"{base}/login/", timeout=10) as response:
        form = response.read().decode()
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    if found is None:
        raise RuntimeError("no CSRF token on the login form")
    data = urllib.parse.urlencode(
        {"username": user, "password": password, "csrfmiddlewaretoken": found[1]}
    ).encode()
    request = urllib.request.Request(
        f"{base}/login/", data=data, headers={"Referer": f"{base}/login/"}
    )
    with opener.open(request, timeout=10):
        pass
    session = [c.value for c in jar if c.name == "sessionid"]
    if not session:
        raise RuntimeError("login failed: no session cookie")
    return f"sessionid={session[0]}"


def _wait_for_progress(
    client: redis.Redis, consumer: ConsumerProcess, timeout: float = 30.0
) -> None:
    deadline = time.monotonic() + timeout
    while committed_total(client, "latency", "bench", QUEUES) < 1000:
        consumer.sample()
        if time.monotonic() > deadline:
            raise TimeoutError("the latency consumer made no progress")
        time.sleep(0.05)


def _percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile of sorted ``values``."""
    if not values:
        return float("nan")
    rank = max(1, min(len(values), math.ceil(q * len(values))))
    return values[rank - 1]


# ---- processes -------------------------------------------------------------------------


@contextmanager
def _workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="lockstep-bench-dash-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _django_env(url: str, tmp: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "lockstep.dashboard.settings",
        "REDIS_URL": url,
        "CHANNELS_REDIS_URL": url,
        "CELERY_BROKER_URL": url,
        "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}",
        "LOG_LEVEL": "WARNING",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        **extra,
    }


@contextmanager
def _web_side(url: str, tmp: Path, user: str, password: str) -> Iterator[int]:
    """Migrated database, demo user, daphne and the ingester; yields daphne's port."""
    env = _django_env(url, tmp, DEMO_ADMIN_USER=user, DEMO_ADMIN_PASSWORD=password)
    for args in (["migrate", "--noinput"], ["bootstrap_demo"]):
        subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            timeout=120,
        )
    port = _free_port()
    logs = open(tmp / "web.log", "wb")  # noqa: SIM115 (closed below)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(port),
                "lockstep.dashboard.asgi:application",
            ],
            cwd=ROOT,
            env=env,
            stdout=logs,
            stderr=subprocess.STDOUT,
        ),
        subprocess.Popen(
            [sys.executable, "manage.py", "ingest_events"],
            cwd=ROOT,
            env=env,
            stdout=logs,
            stderr=subprocess.STDOUT,
        ),
    ]
    try:
        _wait_for_http(f"http://127.0.0.1:{port}/login/", procs[0])
        yield port
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        logs.close()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class DashboardDidNotStart(RuntimeError):
    """Daphne exited, or did not answer before the deadline: ``run`` reports it as the
    result's ``error`` (one line) instead of a traceback."""


def _wait_for_http(
    url: str, proc: subprocess.Popen[bytes], timeout: float = 60.0, request_timeout: float = 5.0
) -> None:
    """Return once ``url`` answers 200. Every failed attempt (refused, reset, a read timing
    out on a loaded machine, a half-written answer) is retried until ``timeout``; then, or
    when daphne exits, ``DashboardDidNotStart`` says why."""
    deadline = time.monotonic() + timeout
    last = "no attempt"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise DashboardDidNotStart(f"daphne exited during start-up (status {proc.returncode})")
        try:
            with urllib.request.urlopen(url, timeout=request_timeout) as response:
                if response.status == 200:
                    return
                last = f"HTTP {response.status}"
        except (OSError, http.client.HTTPException) as exc:
            last = f"{type(exc).__name__}: {exc}"
        time.sleep(0.1)
    raise DashboardDidNotStart(f"daphne did not answer {url} within {timeout:.0f} s ({last})")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "ingest":
        _ingest_main(int(sys.argv[2]))
    else:
        sys.exit("usage: python -m bench.dashboard ingest N")
