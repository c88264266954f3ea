"""Storage benchmark: how many events, and how many database bytes, the event pipeline
stores per 1,000 messages consumed, by event type, before and after commit events were
limited to one per (queue, group) per ``LOCKSTEP_COMMIT_EVENT_INTERVAL``.

For each commit-event interval (``before``: 0.1 s, what the flush-window coalescing gave;
``after``: the default) and each ordering (queue; key with 16 lanes), on a private
redis-server: a fresh copy of a migrated SQLite database, ``manage.py ingest_events``
writing into it, one ``lockstep consume`` (no-op handler, 8 queues), and this process
producing ``messages`` at ``rate`` a second. The rate is steady on purpose: a deployment
produces as it goes, while a consumer working through a backlog commits in bursts and
would make any coalescing look better than it is. Once every message is committed the
consumer is stopped (SIGTERM: its pending commit events are written), the ingester
catches up and is stopped, and the database is read back with ``sqlite3``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import redis

from bench import database
from bench.common import ConsumerProcess, committed_total, private_redis
from lockstep.workers import Producer, keys
from lockstep.workers.config import Timings
from lockstep.workers.events import delete_event_log, event_streams
from lockstep.workers.inspect import overview
from lockstep.workers.redis_types import entries
from lockstep.workers.topics import create_topic

QUEUES = 8
KEY_COUNT = 4000
NOOP = "bench.handlers.noop"
ORDERINGS = {
    "queue": ["--ordering", "queue"],
    "key": ["--ordering", "key", "--lanes", "16"],
}
# What the old coalescing amounted to: one commit event per queue per event flush window.
BEFORE_INTERVAL_S = 0.1
CATCH_UP_TIMEOUT_S = 120.0


def run(
    messages: int = 6000, rate: float = 200.0, interval_s: float | None = None
) -> dict[str, Any]:
    """Both intervals (``before`` and ``after``), or only ``interval_s`` when given."""
    intervals = (
        {"run": interval_s}
        if interval_s is not None
        else {"before": BEFORE_INTERVAL_S, "after": Timings.from_env().commit_event_interval_s}
    )
    started = time.monotonic()
    result: dict[str, Any] = {"queues": QUEUES, "messages": messages, "rate_per_s": rate}
    runs: dict[str, Any] = {}
    with private_redis() as url, database.migrated_template(url) as template:
        for label, interval in intervals.items():
            per_ordering = {
                ordering: _one_run(
                    url, template, f"{label}-{ordering}", args, interval, messages, rate
                )
                for ordering, args in ORDERINGS.items()
            }
            runs[label] = _summary(interval, per_ordering, messages)
    result["runs"] = runs
    for field in ("events_stored_per_1000_msgs", "db_bytes_per_1000_msgs"):
        result[field] = {label: run[field] for label, run in runs.items()}
    if "before" in runs and runs["after"]["events_stored_per_1000_msgs"]:
        result["events_reduction_factor"] = round(
            runs["before"]["events_stored_per_1000_msgs"]
            / runs["after"]["events_stored_per_1000_msgs"],
            1,
        )
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    return result


def _one_run(
    url: str,
    template: Path,
    name: str,
    ordering_args: list[str],
    interval_s: float,
    messages: int,
    rate: float,
) -> dict[str, Any]:
    client = redis.Redis.from_url(url)
    delete_event_log(client)
    topic = f"storage-{name}"
    create_topic(client, topic, QUEUES)
    db_path = database.copy_database(template, name)
    empty_bytes = database.size_bytes(db_path)
    ingester = database.IngesterProcess(url, db_path)
    consumer = ConsumerProcess(
        url,
        topic,
        "storage",
        ["--handler", NOOP, *ordering_args],
        env={"LOCKSTEP_COMMIT_EVENT_INTERVAL": str(interval_s)},
    )
    try:
        wait_until_owned(client, topic, "storage", QUEUES, consumer)
        seconds = _produce_steadily(url, topic, messages, rate, consumer)
        _wait_committed(client, topic, messages, consumer)
        consumer.stop()
        _wait_ingested(client, db_path, ingester)
    finally:
        consumer.stop()
        ingester.stop()
    database.checkpoint(db_path)
    by_type = database.events_by_type(db_path)
    stored = sum(n for n, _ in by_type.values())
    result = {
        "events_stored": stored,
        "db_bytes": database.size_bytes(db_path) - empty_bytes,
        "produce_seconds": round(seconds, 1),
        "by_type": {
            t: {"events": n, "payload_bytes": b, "share": round(n / stored, 3)}
            for t, (n, b) in sorted(by_type.items(), key=lambda kv: -kv[1][0])
        },
    }
    db_path.unlink()
    client.close()
    return result


def wait_until_owned(
    client: redis.Redis, topic: str, group: str, queues: int, consumer: ConsumerProcess
) -> None:
    """Until the consumer holds every queue's lock: production starts on a running
    consumer, not on one still importing Django."""
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    while _owned(client, topic, group) < queues:
        consumer.sample()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}: the consumer did not take its queues")
        time.sleep(0.1)


def _owned(client: redis.Redis, topic: str, group: str) -> int:
    return sum(
        1
        for t in overview(client)["topics"]
        if t["name"] == topic
        for q in t["queues"]
        for g in q["groups"]
        if g["group"] == group and g["owner"]
    )


def _produce_steadily(
    url: str, topic: str, messages: int, rate: float, consumer: ConsumerProcess
) -> float:
    """Send ``messages`` at ``rate`` a second (keys spread over KEY_COUNT)."""
    producer = Producer(url)
    started = time.monotonic()
    try:
        for i in range(messages):
            ahead = started + i / rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
            producer.send(topic, f"k{i % KEY_COUNT}", b"x" * 100)
            if i % 500 == 0:
                consumer.sample()
    finally:
        producer.close()
    return time.monotonic() - started


def _wait_committed(
    client: redis.Redis, topic: str, messages: int, consumer: ConsumerProcess
) -> None:
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    while committed_total(client, topic, "storage", QUEUES) < messages:
        consumer.sample()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}: not every message was committed")
        time.sleep(0.1)


def _wait_ingested(client: redis.Redis, db_path: Path, ingester: database.IngesterProcess) -> None:
    """Until the ingester's stored cursor of every event stream is the stream's last entry
    (the cursor of ``ls:events`` is named ``events``, a shard's by its key)."""
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    targets: dict[str, str] = {}
    for stream in event_streams(client):
        last = entries(client.xrevrange(stream, count=1))
        if last:
            targets["events" if stream == keys.EVENTS else stream] = last[0][0].decode()
    while any(database.ingested_up_to(db_path, name) != t for name, t in targets.items()):
        ingester.check()
        if time.monotonic() > deadline:
            raise TimeoutError("the ingester did not catch up with the event stream")
        time.sleep(0.2)


def _summary(interval_s: float, per_ordering: dict[str, Any], messages: int) -> dict[str, Any]:
    """Per 1,000 messages, over both orderings (each consumed ``messages``)."""
    total = messages * len(per_ordering)
    per_k = 1000 / total
    by_type: dict[str, dict[str, float]] = {}
    for run in per_ordering.values():
        for t, row in run["by_type"].items():
            cell = by_type.setdefault(
                t, {"events_per_1000_msgs": 0.0, "payload_bytes_per_1000_msgs": 0.0}
            )
            cell["events_per_1000_msgs"] += row["events"] * per_k
            cell["payload_bytes_per_1000_msgs"] += row["payload_bytes"] * per_k
    return {
        "commit_event_interval_s": interval_s,
        "events_stored_per_1000_msgs": round(
            sum(r["events_stored"] for r in per_ordering.values()) * per_k, 1
        ),
        "db_bytes_per_1000_msgs": round(sum(r["db_bytes"] for r in per_ordering.values()) * per_k),
        "by_type": {
            t: {k: round(v, 1) for k, v in cell.items()}
            for t, cell in sorted(by_type.items(), key=lambda kv: -kv[1]["events_per_1000_msgs"])
        },
        "orderings": {
            ordering: {
                "events_stored_per_1000_msgs": round(run["events_stored"] * 1000 / messages, 1),
                "db_bytes_per_1000_msgs": round(run["db_bytes"] * 1000 / messages),
                **run,
            }
            for ordering, run in per_ordering.items()
        },
    }
