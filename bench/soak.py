"""Soak benchmark: does the event pipeline stay flat when it runs for a long time?

On a private redis-server, with its own SQLite database in a temporary directory:

1. **Probe**: a backlog of ``PROBE_MESSAGES`` and one ``lockstep consume`` (queue
   ordering, batch 1, no-op handler, events on, 8 queues); the maximum consume rate is
   its commits per second over ``PROBE_SECONDS`` once it is running.
2. **Soak**: ``manage.py ingest_events`` into the database, a fresh consumer as above on
   another topic, and, once the consumer owns its queues and the ingester has stored its
   first events, a producer thread in this process sending at half the maximum rate
   (pipelined produce-script calls, paced every ``PRODUCE_TICK_S``)
   for ``minutes``. Every ``sample_s`` (10 s; shorter for runs under a minute, so a short
   run still has a few samples) it records throughput, lag (offsets, and seconds: the age
   of the oldest unconsumed message), the consumer's and the ingester's RSS, the
   database's size (pages in use, ``db_bytes``; and the file with its write-ahead log,
   ``db_file_bytes``, which grows until SQLite checkpoints) and its stored event count.

The summary says whether the run was ``flat``: memory and lag did not grow with time
(the criterion is in ``flat_criterion``); the database grows by ``db_growth_bytes_per_hour``
(a least-squares slope over the samples), which retention bounds.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import redis

from bench import database
from bench.common import ConsumerProcess, committed_total, load_topic, private_redis
from bench.storage import wait_until_owned
from lockstep.workers import keys
from lockstep.workers.hashing import queue_for_key
from lockstep.workers.inspect import overview
from lockstep.workers.refs import QueueRef
from lockstep.workers.scripts import script
from lockstep.workers.topics import create_topic

QUEUES = 8
KEY_COUNT = 4000
CONSUMER_ARGS = ["--handler", "bench.handlers.noop", "--ordering", "queue"]
# Enough backlog for a few seconds of a consumer flat out (queue ordering at batch 1 runs
# at about 100,000 messages a second here since it commits on an interval).
PROBE_MESSAGES = 400_000
# The producer sends what is due every tick in one pipeline of produce-script calls: a
# synchronous send per message reaches only about 10,000 messages a second here, far
# below half the consumer's maximum.
PRODUCE_TICK_S = 0.01
PRODUCE_PIPELINE_MAX = 5_000
PROBE_SECONDS = 4.0
# The soak starts once the ingester has stored the consumer's first events; it gives up
# after this long (Django's start on a loaded machine: seconds).
INGEST_START_TIMEOUT_S = 120.0
SAMPLE_S = 10.0
# Flat: neither process grew by more than this over the second half of the run (an
# allocator settling after warm-up is not a leak; a leak keeps growing), ...
RSS_GROWTH_LIMIT_MB = 10.0
# ... and the consumer kept up: at the end it is at most this many seconds of production
# behind (one sample of lag can be a commit in flight, not a backlog).
LAG_LIMIT_S = 2.0


def run(minutes: float, sample_s: float | None = None) -> dict[str, Any]:
    duration_s = minutes * 60
    every = sample_s or min(SAMPLE_S, max(1.0, duration_s / 6))
    started = time.monotonic()
    with private_redis() as url, database.migrated_template(url) as template:
        max_rate = _probe(url)
        rate = max_rate / 2
        db_path = database.copy_database(template, "soak")
        samples = _soak(url, db_path, rate, duration_s, every)
    return {
        "queues": QUEUES,
        "minutes": minutes,
        "sample_s": every,
        "max_consume_rate_per_s": round(max_rate),
        "rate_per_s": round(rate),
        "series": samples,
        "summary": summarise(samples, rate),
        "elapsed_s": round(time.monotonic() - started, 1),
    }


def _probe(url: str) -> float:
    client = redis.Redis.from_url(url)
    load_topic(client, "soak-probe", QUEUES, PROBE_MESSAGES, KEY_COUNT)
    consumer = ConsumerProcess(url, "soak-probe", "probe", CONSUMER_ARGS, env={})
    try:
        while committed_total(client, "soak-probe", "probe", QUEUES) == 0:
            consumer.sample()
            time.sleep(0.05)
        t0, c0 = time.monotonic(), committed_total(client, "soak-probe", "probe", QUEUES)
        t1, c1 = t0, c0
        # Measured while a backlog remains: the rate drops as the last queues run dry.
        while t1 - t0 < PROBE_SECONDS and c1 < PROBE_MESSAGES * 0.8:
            consumer.sample()
            time.sleep(0.1)
            t1, c1 = time.monotonic(), committed_total(client, "soak-probe", "probe", QUEUES)
    finally:
        consumer.stop()
        client.close()
    if t1 - t0 < 1.0:
        raise RuntimeError("the probe ran out of backlog within a second: raise PROBE_MESSAGES")
    return (c1 - c0) / (t1 - t0)


class _SteadyProducer(threading.Thread):
    """Sends at ``rate`` a second until stopped, through the runtime's produce script
    (the same dense offsets and fields as ``Producer.send``), in one pipeline per tick;
    ``sent`` counts what Redis stored. A key's messages go out in order."""

    def __init__(self, url: str, topic: str, rate: float) -> None:
        super().__init__(name="soak-producer", daemon=True)
        self._client = redis.Redis.from_url(url)
        self._produce = script(self._client, "produce")
        self._topic, self._rate = topic, rate
        self._halt = threading.Event()
        self.sent = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        started = time.monotonic()
        try:
            while not self._halt.wait(PRODUCE_TICK_S):
                due = int((time.monotonic() - started) * self._rate) - self.sent
                if due > 0:
                    self._send(min(due, PRODUCE_PIPELINE_MAX))
        except BaseException as exc:  # reported by the sampling loop
            self.error = exc

    def _send(self, count: int) -> None:
        pipe = self._client.pipeline(transaction=False)
        for n in range(self.sent, self.sent + count):
            key = f"k{n % KEY_COUNT}"
            ref = QueueRef(self._topic, queue_for_key(key, QUEUES))
            self._produce(
                keys=keys.produce_keys(ref),
                args=[key, b"x" * 100, "{}", 0],
                client=pipe,
            )
        pipe.execute()
        self.sent += count

    def stop(self) -> None:
        self._halt.set()
        self.join(30)
        self._client.close()


def _soak(url: str, db_path: Path, rate: float, duration_s: float, every: float) -> list[Any]:
    client = redis.Redis.from_url(url)
    create_topic(client, "soak", QUEUES)
    ingester = database.IngesterProcess(url, db_path)
    consumer = ConsumerProcess(url, "soak", "soak", CONSUMER_ARGS, env={})
    producer = _SteadyProducer(url, "soak", rate)
    samples: list[dict[str, Any]] = []
    try:
        wait_until_owned(client, "soak", "soak", QUEUES, consumer)
        _wait_until_ingesting(db_path, ingester)
        producer.start()
        t0 = time.monotonic()
        previous = (t0, 0)
        while (now := time.monotonic()) - t0 < duration_s:
            time.sleep(min(every, max(0.0, t0 + duration_s - now)))
            consumer.sample()
            ingester.check()
            if producer.error is not None:
                raise RuntimeError("the producer failed") from producer.error
            sample = _sample(client, db_path, consumer, ingester, t0, previous)
            previous = (time.monotonic(), sample["committed"])
            sample["produced"] = producer.sent
            samples.append(sample)
    finally:  # each stopped whatever the others do: no process outlives the run
        try:
            producer.stop()
        finally:
            consumer.stop()
            ingester.stop()
            client.close()
    return samples


def _wait_until_ingesting(db_path: Path, ingester: database.IngesterProcess) -> None:
    """Until the ingester stored its first events (the consumer's lock events): the soak
    starts on a running pipeline, not on an ingester still importing Django, which took
    longer than a short run on a loaded machine."""
    deadline = time.monotonic() + INGEST_START_TIMEOUT_S
    while database.event_count(db_path) == 0:
        ingester.check()
        if time.monotonic() > deadline:
            raise TimeoutError("the ingester stored no event of the consumer's start")
        time.sleep(0.1)


def _sample(
    client: redis.Redis,
    db_path: Path,
    consumer: ConsumerProcess,
    ingester: database.IngesterProcess,
    t0: float,
    previous: tuple[float, int],
) -> dict[str, Any]:
    now = time.monotonic()
    committed = committed_total(client, "soak", "soak", QUEUES)
    groups = [
        g
        for t in overview(client)["topics"]
        if t["name"] == "soak"
        for q in t["queues"]
        for g in q["groups"]
    ]
    return {
        "t_s": round(now - t0, 1),
        "committed": committed,
        "throughput_msgs_per_s": round((committed - previous[1]) / (now - previous[0]), 1),
        "lag": sum(int(g["lag"]) for g in groups),
        "lag_s": round(max((float(g["time_lag_s"] or 0) for g in groups), default=0.0), 3),
        "consumer_rss_mb": rss_mb(consumer.proc.pid),
        "ingester_rss_mb": rss_mb(ingester.proc.pid),
        "db_bytes": database.logical_bytes(db_path),
        "db_file_bytes": database.size_bytes(db_path),
        "events_stored": database.event_count(db_path),
    }


def rss_mb(pid: int) -> float:
    """Resident set size in MB (0 when the process is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return 0.0


def slope_per_hour(samples: list[dict[str, Any]], field: str) -> float:
    """Least-squares growth of ``field`` per hour over the samples (0 with fewer than 2)."""
    if len(samples) < 2:
        return 0.0
    ts = [float(s["t_s"]) for s in samples]
    ys = [float(s[field]) for s in samples]
    mean_t, mean_y = sum(ts) / len(ts), sum(ys) / len(ys)
    var = sum((t - mean_t) ** 2 for t in ts)
    if var == 0:
        return 0.0
    cov = sum((t - mean_t) * (y - mean_y) for t, y in zip(ts, ys, strict=True))
    return cov / var * 3600


def summarise(samples: list[dict[str, Any]], rate: float) -> dict[str, Any]:
    if not samples:
        raise RuntimeError("no sample was taken")
    first, last, middle = samples[0], samples[-1], samples[len(samples) // 2]
    second_half = {
        p: round(last[f"{p}_rss_mb"] - middle[f"{p}_rss_mb"], 1) for p in ("consumer", "ingester")
    }
    lag_limit = max(10, round(rate * LAG_LIMIT_S))
    flat = max(second_half.values()) <= RSS_GROWTH_LIMIT_MB and last["lag"] <= lag_limit
    return {
        "produced": last["produced"],
        "produce_rate_per_s": round(last["produced"] / last["t_s"]) if last["t_s"] else 0,
        "committed": last["committed"],
        "throughput_mean_msgs_per_s": round(
            sum(s["throughput_msgs_per_s"] for s in samples) / len(samples), 1
        ),
        "rss_growth_mb": {
            p: round(last[f"{p}_rss_mb"] - first[f"{p}_rss_mb"], 1)
            for p in ("consumer", "ingester")
        },
        "rss_growth_second_half_mb": second_half,
        "lag_max": max(s["lag"] for s in samples),
        "lag_last": last["lag"],
        "lag_s_max": max(s["lag_s"] for s in samples),
        "lag_s_last": last["lag_s"],
        "db_bytes_last": last["db_bytes"],
        "db_growth_bytes_per_hour": round(slope_per_hour(samples, "db_bytes")),
        "events_stored_last": last["events_stored"],
        "events_per_hour": round(slope_per_hour(samples, "events_stored")),
        "flat": flat,
        "flat_criterion": (
            f"the consumer's and the ingester's RSS each grew by at most "
            f"{RSS_GROWTH_LIMIT_MB:g} MB over the second half of the run, and the last lag "
            f"is at most {LAG_LIMIT_S:g} s of production ({lag_limit} messages)"
        ),
    }
