"""An adopter's own Celery app — a module of theirs, no Django anywhere — gets ordered
consumers from ``lockstep.celery.install`` with a callable handler: per-key order holds
across a suspend and a raised exception, the exception is in the worker's log (logger
``lockstep``, with topic, group, queue, offset and key), the app's own task still runs in
its pool, and SIGTERM stops the worker cleanly (exit 0)."""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import celery
import pytest
import redis

from lockstep import Producer, SendResult, create_topic
from lockstep.workers.events import read_all_events
from tests.support import wait_until
from tests.workers.harness import FAST_ENV

ROOT = Path(__file__).resolve().parents[2]
APP_MODULE = "shop_worker"
TOPIC, GROUP = "payments", "ledger"
KEYS = [f"acct-{i}" for i in range(6)]
PER_KEY = 8
SUSPENDS = ("acct-1", 3)  # (key, seq): returns SUSPEND on its first call
RAISES = ("acct-2", 5)  # raises on its first call

# The adopter's module: a plain Celery app, its own task, and Lockstep installed with a
# callable handler defined right here. It writes what it did to Redis for the test.
APP_SOURCE = f'''
import json
import os

import redis
from celery import Celery

import lockstep.celery
from lockstep import ConsumeStatus, Subscription

app = Celery("shop", broker=os.environ["SHOP_BROKER_URL"])
data = redis.Redis.from_url(os.environ["REDIS_URL"])


def settle(messages, ctx):
    for m in messages:
        spec = json.loads(m.body)
        calls = data.hincrby("shop:calls", f"{{m.key}}:{{spec['seq']}}", 1)
        if spec.get("suspend_once") and calls == 1:
            return ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        if spec.get("raise_once") and calls == 1:
            raise RuntimeError(f"card declined for {{m.key}}")
        record = {{"k": m.key, "s": spec["seq"], "pid": os.getpid()}}
        data.rpush("shop:handled", json.dumps(record))
    return ConsumeStatus.SUCCESS


@app.task
def mark_shipped(order_id):
    data.rpush("shop:shipped", json.dumps({{"order": order_id, "pid": os.getpid()}}))


lockstep.celery.install(
    app,
    subscriptions=[
        Subscription(
            "{TOPIC}", "{GROUP}", handler=settle, ordering="key", lanes=4, retry_initial_ms=50
        )
    ],
)
'''

# Loaded by every interpreter started with the app's folder on PYTHONPATH: Django and the
# dashboard cannot be imported there, as on a host that never installed them.
NO_DJANGO = """
import importlib.abc, sys

ABSENT = ("django", "lockstep.dashboard", "lockstep.analytics")

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == top or name.startswith(top + ".") for top in ABSENT):
            raise ImportError(f"{name} is not installed here")
        return None

sys.meta_path.insert(0, NotInstalled())
"""


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / f"{APP_MODULE}.py").write_text(APP_SOURCE)
    (folder / "sitecustomize.py").write_text(NO_DJANGO)
    return folder


@pytest.fixture
def shop_app(
    app_dir: Path, standalone_redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ModuleType]:
    """The adopter's module imported here too, to send its task; Celery's current app is
    put back afterwards so no other test sends to the shop's app."""
    monkeypatch.setenv("SHOP_BROKER_URL", standalone_redis_url)
    monkeypatch.syspath_prepend(str(app_dir))
    previous = cast(Any, celery.current_app)._get_current_object()  # the proxy's target
    module = importlib.import_module(APP_MODULE)
    previous.set_current()
    yield module
    module.app.close()
    sys.modules.pop(APP_MODULE, None)


def _start_worker(
    app_dir: Path, redis_url: str, broker_url: str, log: Path
) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(FAST_ENV)
    env.update(
        {
            "REDIS_URL": redis_url,  # install() was given no redis_url: read at start
            "SHOP_BROKER_URL": broker_url,
            "PYTHONPATH": os.pathsep.join([str(app_dir), str(ROOT)]),
        }
    )
    with log.open("wb") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                APP_MODULE,
                "worker",
                "--concurrency",
                "1",
                "--loglevel",
                "INFO",
                "--without-mingle",
                "--without-gossip",
                "-n",
                "shop@%h",
            ],
            cwd=app_dir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _produce(producer: Producer) -> dict[tuple[str, int], SendResult]:
    """PER_KEY messages per key, interleaved across keys, each key's in order."""
    sent: dict[tuple[str, int], SendResult] = {}
    for seq in range(PER_KEY):
        for key in KEYS:
            spec: dict[str, Any] = {"seq": seq}
            if (key, seq) == SUSPENDS:
                spec["suspend_once"] = True
            if (key, seq) == RAISES:
                spec["raise_once"] = True
            sent[key, seq] = producer.send(TOPIC, key, json.dumps(spec).encode())
    return sent


def _handled(client: redis.Redis) -> list[dict[str, Any]]:
    return [json.loads(r) for r in client.lrange("shop:handled", 0, -1)]


def _first_handlings(records: list[dict[str, Any]]) -> dict[str, list[int]]:
    firsts: dict[str, list[int]] = defaultdict(list)
    for r in records:
        if r["s"] not in firsts[r["k"]]:
            firsts[r["k"]].append(r["s"])
    return dict(firsts)


def test_it_consumes_in_key_order_beside_the_apps_own_tasks_and_logs_the_handlers_error(
    app_dir: Path,
    shop_app: ModuleType,
    redis_url: str,
    standalone_redis_url: str,
    redis_client: redis.Redis,
    producer: Producer,
    tmp_path: Path,
) -> None:
    create_topic(redis_url, TOPIC, 4)
    log = tmp_path / "worker.log"
    worker = _start_worker(app_dir, redis_url, standalone_redis_url, log)
    try:
        sent = _produce(producer)
        shop_app.mark_shipped.delay("order-1842")

        wait_until(
            lambda: (
                sum(len(s) for s in _first_handlings(_handled(redis_client)).values()) == len(sent)
            ),
            60,
            lambda: f"every message handled; worker log:\n{log.read_text()[-3000:]}",
        )
        shipped = wait_until(
            lambda: redis_client.lrange("shop:shipped", 0, -1), 30, "the app's own task to run"
        )
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(30)
        finally:
            if worker.poll() is None:
                worker.kill()
    output = log.read_text(errors="replace")
    assert worker.returncode == 0, output[-3000:]

    records = _handled(redis_client)
    assert _first_handlings(records) == {k: list(range(PER_KEY)) for k in KEYS}, output[-3000:]
    assert {r["pid"] for r in records} == {worker.pid}, "consumers run in the worker's main process"
    raw_calls = cast(dict[bytes, bytes], redis_client.hgetall("shop:calls"))
    calls = {k.decode(): int(v) for k, v in raw_calls.items()}
    assert calls[f"{SUSPENDS[0]}:{SUSPENDS[1]}"] == 2
    assert calls[f"{RAISES[0]}:{RAISES[1]}"] == 2

    task = json.loads(shipped[0])
    assert task["order"] == "order-1842"
    assert task["pid"] != worker.pid, "the app's task runs in its pool, as before"

    raised = sent[RAISES]
    assert (
        f"handler {APP_MODULE}.settle raised RuntimeError: card declined for acct-2: "
        f"topic={TOPIC} group={GROUP} queue={raised.queue} offset={raised.offset} "
        f"key='acct-2' attempt=1"
    ) in output
    assert 'raise RuntimeError(f"card declined for {m.key}")' in output, "with its traceback"
    assert "SUSPEND_CURRENT_QUEUE_A_MOMENT" not in output, "a requested suspend is no error"
    assert "lockstep: consumer" in output

    events = read_all_events(redis_client)
    failed = {e["key"]: e["details"]["error"] for e in events if e["type"] == "consume_failed"}
    assert failed == {
        "acct-1": "handler returned SUSPEND_CURRENT_QUEUE_A_MOMENT",
        "acct-2": "RuntimeError: card declined for acct-2",
    }
    released = {e["queue"] for e in events if e["type"] == "lock_released"}
    assert released == set(range(4)), "SIGTERM hands every queue over"
