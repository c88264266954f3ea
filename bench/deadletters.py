"""Dead-letter benchmark: the list API's first page at 100,000 dead letters in one group,
and the sync's rate.

- **Load**: ``count`` dead letters written straight into the group's dead-letter streams
  of one topic (8 queues) with pipelined ``XADD`` of exactly the fields the runtime
  writes (``workers.broker.dead_letter_entry`` plus ``dead_at``): 5,000 keys, a 200-byte
  JSON body, three recorded attempts with tracebacks, one dead letter in 100 a
  ``TimeoutError`` (a rare error to search for), one per millisecond.
- **Sync**: in a subprocess on a fresh, migrated SQLite database (the default
  deployment), ``sync_dead_letters`` called until it has nothing more: records per
  second, history rows included.
- **First page**: then 10 % of the records are marked discarded and a viewer asks
  ``GET /api/v1/groups/<group>/dead-letters`` (Django's test client: the whole view, no
  HTTP server) for the first page of 50 under several filters, and for a page deep in
  the list (a cursor at the middle record); medians of ``repeats`` requests after one
  warm-up. Target: first page < 300 ms.

Django is imported only inside the subprocess (``python -m bench.deadletters measure``).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import redis

from bench.common import ROOT, private_redis
from lockstep.workers import keys
from lockstep.workers.broker import dead_letter_entry
from lockstep.workers.config import AfterDlq, Ordering, Subscription
from lockstep.workers.hashing import queue_for_key
from lockstep.workers.message import FailedAttempt, Message
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import create_topic, register_group

TOPIC, GROUP, QUEUES = "orders", "bench", 8
KEY_COUNT = 5_000
T0_MS = 1_795_000_000_000
PIPELINE = 2_000  # XADDs per round trip
TARGETS = {"first_page_ms": 300.0}
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "handlers.py", line 42, in handle\n'
    "    charge(order)\n"
    "RuntimeError: payment service unavailable"
)
# name -> query string of the list API (the key filter names a key with 20 dead letters).
CASES = {
    "no_filter": "",
    "status_dead": "status=dead",
    "topic_and_queue": f"topic={TOPIC}&queue=3",
    "key": "key=k42",
    "error_text": "error=timeout",
    "time_range": f"since={T0_MS + 40_000}&until={T0_MS + 60_000}",
    "status_discarded_oldest_first": "status=discarded&sort=dead_at",
}


def run(count: int = 100_000, repeats: int = 15) -> dict[str, Any]:
    started = time.monotonic()
    with private_redis() as url:
        client = redis.Redis.from_url(url)
        fill_seconds = fill(client, count)
        client.close()
        measured = _measure_in_subprocess(url, count, repeats)
    first_pages = [v for k, v in measured["pages_ms"].items() if k != "deep_page"]
    return {
        "dead_letters": count,
        "group": GROUP,
        "queues": QUEUES,
        "fill_seconds": round(fill_seconds, 2),
        **measured,
        "first_page_median_ms_worst_filter": max(p["median"] for p in first_pages),
        "targets": TARGETS,
        "seconds": round(time.monotonic() - started, 1),
    }


def fill(client: redis.Redis, count: int) -> float:
    """Write ``count`` dead letters as the runtime does; returns the seconds it took."""
    create_topic(client, TOPIC, QUEUES)
    register_group(client, TOPIC, GROUP)
    sub = Subscription(
        TOPIC, GROUP, handler="bench.handlers.noop", ordering=Ordering.KEY, after_dlq=AfterDlq.HOLD
    )
    offsets = [0] * QUEUES
    started = time.perf_counter()
    pipe = client.pipeline(transaction=False)
    for i in range(count):
        key = f"k{i % KEY_COUNT}"
        queue = queue_for_key(key, QUEUES)
        offset = offsets[queue]
        offsets[queue] += 1
        error = "TimeoutError: bank timed out" if i % 100 == 0 else "RuntimeError: payment failed"
        dead_at = T0_MS + i
        body = json.dumps({"order": key, "step": "paid", "n": i, "pad": "x" * 150}).encode()
        message = Message(TOPIC, queue, offset, key, body, {}, (dead_at - 10_000) / 1000, 3)
        attempts: list[FailedAttempt] = [
            {"at_ms": dead_at - 1000 * n, "error": error, "traceback": TRACEBACK} for n in (3, 2, 1)
        ]
        fields: dict[Any, Any] = {
            **dead_letter_entry(message, sub, error, attempts),
            "dead_at": dead_at,
        }
        pipe.xadd(keys.dead_letters(QueueRef(TOPIC, queue), GROUP), fields)
        if i % PIPELINE == PIPELINE - 1:
            pipe.execute()
    pipe.execute()
    return time.perf_counter() - started


def _measure_in_subprocess(url: str, count: int, repeats: int) -> dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="lockstep-bench-dlq-")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "lockstep.dashboard.settings",
        "REDIS_URL": url,
        "CHANNELS_REDIS_URL": url,
        "CELERY_BROKER_URL": url,
        "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3",
        "DJANGO_ALLOWED_HOSTS": "testserver",
        "LOG_LEVEL": "WARNING",
    }
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bench.deadletters", "measure", str(count), str(repeats)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if done.returncode != 0:
        raise RuntimeError(f"dead-letter benchmark failed:\n{done.stderr[-3000:]}")
    measured: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return measured


def _measure_main(count: int, repeats: int) -> None:
    """In the subprocess: migrate, sync everything (timed), then time the list API."""
    import django

    django.setup()
    from django.core.management import call_command

    from lockstep.dashboard.deadletters.sync import sync_dead_letters
    from lockstep.dashboard.web.redis_conn import get_redis

    call_command("migrate", verbosity=0, interactive=False)
    client = get_redis()
    started = time.perf_counter()
    copied = calls = 0
    while True:
        result = sync_dead_letters(client)
        copied, calls = copied + result.copied, calls + 1
        if not result.more:
            break
    sync_seconds = time.perf_counter() - started
    if copied != count:
        raise RuntimeError(f"synced {copied} of {count} dead letters")
    print(
        json.dumps(
            {
                "sync_seconds": round(sync_seconds, 2),
                "sync_per_s": round(copied / sync_seconds),
                "sync_calls": calls,
                "pages_ms": _time_pages(count, repeats),
                "repeats": repeats,
            }
        )
    )


def _time_pages(count: int, repeats: int) -> dict[str, dict[str, float]]:
    from django.contrib.auth.models import User
    from django.test import Client

    from lockstep.dashboard.deadletters.models import DeadLetter, Status
    from lockstep.dashboard.deadletters.queries import Cursor
    from lockstep.dashboard.web.roles import VIEWER, grant_role

    DeadLetter.objects.filter(id__lte=count // 10).update(status=Status.DISCARDED)
    user = User.objects.create_user("bench-viewer", password="bench-password-1")
    grant_role(user, VIEWER)
    client = Client()
    client.force_login(user)
    middle = DeadLetter.objects.order_by("-dead_at", "-id")[count // 2]
    cases = {**CASES, "deep_page": f"cursor={Cursor.after(middle, '-dead_at').encode()}"}
    url = f"/api/v1/groups/{GROUP}/dead-letters?limit=50&"
    timings: dict[str, dict[str, float]] = {}
    for name, query in cases.items():
        samples = []
        for n in range(repeats + 1):
            t0 = time.perf_counter()
            response = client.get(url + query)
            elapsed = (time.perf_counter() - t0) * 1000
            if response.status_code != 200:
                raise RuntimeError(f"{name}: {response.status_code} {response.content[:300]!r}")
            if n:  # the first request warms caches
                samples.append(elapsed)
        items = len(response.json()["items"])
        timings[name] = {
            "median": round(statistics.median(samples), 1),
            "max": round(max(samples), 1),
            "items": items,
        }
    return timings


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "measure":
        _measure_main(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit("usage: python -m bench.deadletters measure COUNT REPEATS")
