"""Ownership sampling and double-ownership checks of the rebalance benchmark
(bench/rebalance.py), for a fleet spread over several processes (bench/rebalance_fleet.py).

*Owning*: a worker owns its queue while it may invoke the handler: not yet stopped (its
state not ``stopped``: after its last write, before it unlocks) and believing its
client-side lock valid (``QueueWorker.lock_valid``: renewed within
``client_lock_expiry_s``, shorter than the Redis lock's TTL). A worker whose client-side
lock went stale takes no message and its writes are fenced; it owns nothing and is counted
apart as a stale overlap.

Two sources:

- memory: every worker records, on the machine's monotonic clock (one clock for all
  processes), each renewal (when it was told, when it was sent), its drop and its stop.
  From them the ``valid_segments`` of every worker of every process: the instants it was
  owning. A queue is *owned twice* at an instant when workers of two consumers are both
  owning at that instant. This is the previous single-process definition (two workers both
  believing they hold a valid lock at one sampled instant) checked at every instant
  instead of every 50 ms: ``double_owned_max`` is the most queues owned twice at one
  instant, ``double_owned_s`` how long in all.
- redis_locks: every ``SAMPLE_S`` the live lock owner of every queue (HMGET of the lock
  hashes in one pipeline, with the Redis clock), between two monotonic readings ``t0`` and
  ``t1``. A queue counts when a worker not dropped and owning over the whole of
  ``[t0, t1]`` belongs to another consumer than the live lock's owner (or when no live
  lock exists: ``running_without_live_lock``). Redis itself holds one lock per queue, so
  two live locks on one queue cannot happen; this checks that no consumer acts on a lock
  Redis gave to someone else.

Convergence is read live: every sample asks each process for its workers not yet stopped
(a snapshot, all processes at once) and reads the Redis locks.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bench.rebalance_fleet import Fleet, status_mb
from lockstep.workers import keys
from lockstep.workers.connection import connect
from lockstep.workers.refs import QueueRef

# Ownership is sampled this often (shorter than any hand-over step).
SAMPLE_S = 0.05

Segment = tuple[int, str, float, float, float | None]  # queue, consumer, start, end, dropped


@dataclass
class Watch:
    """One change being watched: the expected owners and when they were first seen."""

    expected: dict[int, str]
    since: float
    acted_at: float | None = None  # when the change was made (the last consumer started)
    converged_at: float | None = None
    broken_after: bool = False  # a later sample saw it unconverged again
    members: int = 0  # the live group once the change is made
    # Fewest live registry members seen once the change was made and every member had
    # beaten once (a consumer just started may not have sent its first heartbeat yet).
    registered_min: int | None = None
    registered_full: bool = False


@dataclass
class LockSamples:
    """The Redis lock owners of every sample, as consumer indices (-1: no live lock); an
    unchanged sample shares the previous one's array."""

    t0: list[float] = field(default_factory=list)
    t1: list[float] = field(default_factory=list)
    owners: list[array[int]] = field(default_factory=list)
    names: dict[str, int] = field(default_factory=dict)

    def add(self, t0: float, t1: float, owners: dict[int, str], queues: int) -> None:
        row = array("i", [-1] * queues)
        for q, owner in owners.items():
            row[q] = self.names.setdefault(owner, len(self.names))
        if self.owners and self.owners[-1] == row:
            row = self.owners[-1]
        self.t0.append(t0)
        self.t1.append(t1)
        self.owners.append(row)


@dataclass
class SampleStats:
    count: int = 0
    redis_count: int = 0
    gaps: list[float] = field(default_factory=list)
    double_owned_memory_max: int = 0
    double_owned_s: float = 0.0
    # What the double-ownership check read: the valid-lock segments of every worker of
    # every process, and the seconds of queue ownership they add up to.
    segments: int = 0
    owned_s: float = 0.0
    double_owned_redis_max: int = 0
    # Queues with workers of two consumers not yet stopped in one sample, one of them with
    # a stale client-side lock: what a count of every not-stopped worker would have called
    # double ownership. Read from the processes' snapshots of one sample, which are asked
    # at once but not taken at one instant: a diagnostic, not the ownership check.
    stale_overlap_max: int = 0
    running_without_live_lock_max: int = 0
    rss_mb_max: int = 0
    threads_max: int = 0
    ended: Counter[str] = field(default_factory=Counter)
    outages: Counter[str] = field(default_factory=Counter)
    peak_rss_mb: int = 0


class Sampler:
    """Samples ownership every ``SAMPLE_S`` on its own thread (see the module docstring);
    tells when the watched change converged and whether the group stayed converged.
    ``finish`` takes the processes' ownership intervals and counts double ownership."""

    def __init__(self, fleet: Fleet, url: str, queues: int) -> None:
        self.fleet = fleet
        self.queues = queues
        self.stats = SampleStats()
        self.locks = LockSamples()
        self._client = connect(url)
        self._lock_keys = [
            keys.lock(QueueRef(fleet.sub.topic, q), fleet.sub.group) for q in range(queues)
        ]
        self._registry = keys.registry(fleet.sub.topic, fleet.sub.group)
        self._watch: Watch | None = None
        self._redis_on = True
        self._redis_lock = threading.Lock()  # held while the Redis side of a sample runs
        self._stop = threading.Event()
        self._stable = True  # memory converged in every sample since ``without_redis``
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._client.close()

    @property
    def expected(self) -> dict[int, str]:
        """The owners the last watched change converges to (empty before the first)."""
        return self._watch.expected if self._watch is not None else {}

    def watch(self, expected: dict[int, str], members: int) -> Watch:
        self._watch = Watch(expected, time.monotonic(), members=members)
        return self._watch

    def wait_converged(self, watch: Watch, timeout: float) -> bool:
        """Wait up to ``timeout`` from now (the change was made)."""
        deadline = time.monotonic() + timeout
        while watch.converged_at is None and time.monotonic() < deadline:
            time.sleep(SAMPLE_S)
        return watch.converged_at is not None

    @contextmanager
    def without_redis(self) -> Iterator[None]:
        """Pause the Redis side (after any read in progress) and watch that the group stays
        converged in memory meanwhile."""
        with self._redis_lock:
            self._redis_on = False
        self._stable = True
        try:
            yield
        finally:
            self._redis_on = True

    @property
    def stable(self) -> bool:
        return self._stable

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.is_set():
            began = time.monotonic()
            self.stats.gaps.append(began - last)
            last = began
            self._sample()
            self._stop.wait(max(0.0, SAMPLE_S - (time.monotonic() - began)))

    def _sample(self) -> None:
        watch = self._watch
        snapshots = self.fleet.snapshot()
        owners: dict[int, str] | None = None
        with self._redis_lock:
            if self._redis_on:
                owners = self._lock_owners()
        memory_ok = watch is not None and self._memory_converged(snapshots, watch.expected)
        self._count_stale(snapshots)
        if watch is not None and self._redis_on:
            converged = memory_ok and owners == watch.expected
            if converged and watch.converged_at is None:
                watch.converged_at = time.monotonic()
            elif not converged and watch.converged_at is not None and owners is not None:
                watch.broken_after = True
        if not memory_ok:
            self._stable = False
        stats = self.stats
        stats.count += 1
        stats.threads_max = max(
            stats.threads_max, threading.active_count() + sum(s["threads"] for s in snapshots)
        )
        stats.rss_mb_max = max(
            stats.rss_mb_max, status_mb("VmRSS") + sum(s["rss_mb"] for s in snapshots)
        )

    def _lock_owners(self) -> dict[int, str]:
        """Queue -> owner of every lock live now on the Redis clock."""
        pipe = self._client.pipeline(transaction=False)
        pipe.time()
        pipe.zcard(self._registry)
        for key in self._lock_keys:
            pipe.hmget(key, "owner", "expires_at")
        t0 = time.monotonic()
        (seconds, micros), registered, *rows = pipe.execute()
        t1 = time.monotonic()
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        self.stats.redis_count += 1
        watch = self._watch
        if watch is not None and watch.acted_at is not None:
            watch.registered_full = watch.registered_full or registered >= watch.members
        if watch is not None and watch.registered_full:
            low = watch.registered_min
            watch.registered_min = registered if low is None else min(low, registered)
        owners = {
            q: owner.decode()
            for q, (owner, expires) in enumerate(rows)
            if owner and int(expires or 0) > now_ms
        }
        self.locks.add(t0, t1, owners, self.queues)
        return owners

    def _memory_converged(self, snapshots: list[dict[str, Any]], expected: dict[int, str]) -> bool:
        if any(s["others"] for s in snapshots):
            return False
        owning = [pair for s in snapshots for pair in s["owning"]]
        return len(owning) == self.queues and dict(owning) == expected

    def _count_stale(self, snapshots: list[dict[str, Any]]) -> None:
        consumers: dict[int, set[str]] = defaultdict(set)
        stale: set[int] = set()
        for s in snapshots:
            for q, cid in s["owning"]:
                consumers[q].add(cid)
            for q, cid, valid in s["others"]:
                consumers[q].add(cid)
                if not valid:
                    stale.add(q)
        count = sum(1 for q in stale if len(consumers[q]) > 1)
        self.stats.stale_overlap_max = max(self.stats.stale_overlap_max, count)

    def finish(self, reports: list[dict[str, Any]]) -> None:
        """Count double ownership from the processes' ownership intervals (and the lock
        samples), and add up their other reports."""
        stats = self.stats
        segments = [seg for report in reports for seg in report["intervals"]]
        most, seconds = double_owned(segments)
        stats.segments = len(segments)
        stats.owned_s = sum(end - start for _, _, start, end, _ in segments)
        stats.double_owned_memory_max = most
        stats.double_owned_s = seconds
        conflicting, unlocked = against_locks(segments, self.locks)
        stats.double_owned_redis_max = conflicting
        stats.running_without_live_lock_max = unlocked
        for report in reports:
            stats.ended.update(report["ended"])
            stats.outages.update(report["outages"])
        stats.peak_rss_mb = sum(r["peak_rss_mb"] for r in reports) + status_mb("VmHWM")


# -- the checks ----------------------------------------------------------------------------
def merged(spans: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def double_owned(segments: Iterable[Segment]) -> tuple[int, float]:
    """The most queues owned by two consumers at one instant, and for how long queues
    were owned twice in all (summed over queues)."""
    by_queue: dict[int, dict[str, list[tuple[float, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for q, cid, start, end, _dropped in segments:
        by_queue[q][cid].append((start, end))
    doubled: list[tuple[float, float]] = []  # instants some queue was owned twice
    for per_consumer in by_queue.values():
        if len(per_consumer) < 2:
            continue
        events: list[tuple[float, int]] = []
        for spans in per_consumer.values():
            for start, end in merged(spans):
                events += [(start, 1), (end, -1)]
        events.sort(key=lambda e: (e[0], e[1]))  # an end before a start at one instant
        owning, since = 0, 0.0
        for at, step in events:
            before, owning = owning, owning + step
            if before < 2 <= owning:
                since = at
            elif owning < 2 <= before:
                doubled.append((since, at))
    return most_at_once(doubled), sum(end - start for start, end in doubled)


def most_at_once(spans: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, e in spans if e > s] + [(e, -1) for s, e in spans if e > s])
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def against_locks(segments: Iterable[Segment], locks: LockSamples) -> tuple[int, int]:
    """For each lock sample, the queues a worker not dropped owned over the whole read
    while Redis named another owner (first figure) or none (second); the most of each in
    one sample."""
    conflicting: dict[int, set[int]] = defaultdict(set)
    unlocked: dict[int, set[int]] = defaultdict(set)
    by_worker: dict[tuple[int, str], list[tuple[float, float]]] = defaultdict(list)
    for q, cid, start, end, dropped in segments:
        end = min(end, dropped) if dropped is not None else end
        if end > start:
            by_worker[(q, cid)].append((start, end))
    for (q, cid), spans in by_worker.items():
        me = locks.names.get(cid, -2)
        for start, end in merged(spans):
            first = bisect.bisect_left(locks.t0, start)
            last = bisect.bisect_right(locks.t1, end)  # samples ending by ``end``
            for i in range(first, last):
                owner = locks.owners[i][q]
                if owner == -1:
                    unlocked[i].add(q)
                elif owner != me:
                    conflicting[i].add(q)
    return (
        max((len(v) for v in conflicting.values()), default=0),
        max((len(v) for v in unlocked.values()), default=0),
    )


class OutageCount(logging.Handler):
    """Counts the runtime's "Redis is unreachable" warnings by cause. The runtime tells an
    outage once per process (workers.outage), so this counts episodes, not failures."""

    def __init__(self) -> None:
        super().__init__()
        self.causes: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args
        if record.getMessage().startswith("lockstep: Redis is unreachable") and args:
            self.causes[str(args[0] if isinstance(args, tuple) else args)] += 1


@contextmanager
def counting_outages() -> Iterator[Counter[str]]:
    handler = OutageCount()
    logger = logging.getLogger("lockstep.workers.outage")
    logger.addHandler(handler)
    try:
        yield handler.causes
    finally:
        logger.removeHandler(handler)
