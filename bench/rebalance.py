"""Rebalance at scale (issue 15): many consumers of one topic in one process.

Every consumer is a real ``workers.Consumer`` (one clustering subscription, queue
ordering, no-op handler) with its own connection pool and threads, all against one private
redis-server. One run measures three configurations:

- the main one (``consumers`` x ``queues``): start every consumer and wait until the group
  converged; measure the steady-state command rate; then, ``repeats`` times, stop a
  quarter of the consumers (graceful stop) and, once converged, add a quarter back;
- the same consumers with a quarter of the queues, and a quarter of the consumers with
  the same queues: start, converge, measure the steady-state rate. With the main one they
  give three points to fit ``rate = a*queues + b*consumers + c*consumers*queues``.

*Converged* means: every queue is run by exactly one worker, the one of the consumer that
``AverageAllocation`` over the sorted live member ids gives it; no other worker (handed
over, lost) is still running anywhere; and Redis holds a live lock on every queue for
that same consumer. The time to converge runs from the change (the first start, the first
stop) to the first sample that sees it.

Ownership is sampled every ``SAMPLE_S`` from two sources (``Sampler``):

- memory: every consumer's workers (running and retiring). A worker owns its queue from
  its creation (after its lock was granted) until it set its state to ``stopped``, which
  it does after its last write and before it unlocks. Two consumers owning a queue in one
  sample is counted only when it is confirmed: a sample reads the workers one after the
  other, so the earlier-read worker must still be running after the later one was seen;
- redis_locks: the live lock owner of every queue (HMGET of the lock hashes, one
  pipeline, with the Redis clock). A queue counts when a consumer's worker that was
  neither dropped nor stopped before and after the read is not the live lock's owner.

The steady-state command rate is the ``INFO commandstats`` delta over ``STEADY_WINDOW_S``
after a settling rebalance interval, with the Redis side of the sampler paused (its HMGETs
would count), by command and in total.
"""

from __future__ import annotations

import logging
import os
import re
import statistics
import threading
import time
import weakref
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import redis

from bench.common import private_redis
from bench.handlers import noop
from workers import Consumer, Subscription, Timings, create_topic, keys
from workers.allocation import AverageAllocation
from workers.config import Model, Ordering
from workers.ordering import QueueWorker
from workers.rebalance import SubscriptionRunner
from workers.refs import QueueRef
from workers.scripts import source

HANDLER = "bench.handlers.noop"

# RocketMQ's rebalance and lock timings (20 s, 20 s, 30 s, 60 s) divided by ten, so a
# run takes minutes; every ratio the runtime relies on is kept.
TIMINGS = Timings(
    rebalance_interval_s=2.0,
    lock_renew_interval_s=2.0,
    client_lock_expiry_s=3.0,
    lock_ttl_s=6.0,
    # The test harness's poll: a leave is seen within a tenth of an interval. Shorter would
    # make every consumer read the whole member list (consumers^2 work) too often.
    membership_poll_s=0.2,
    # Six beats per timeout (the defaults have five) and a timeout of 3 s rather than a
    # tenth of 15 s: hundreds of threads on two shared cores can delay a beat by a second,
    # and a member evicted by mistake would reshuffle every queue.
    heartbeat_interval_s=0.5,
    heartbeat_timeout_s=3.0,
)
# Ownership is sampled this often (the brief's 50 ms: shorter than any hand-over step).
SAMPLE_S = 0.05
# Long enough for every periodic call (renewal 2 s, beat 0.5 s, read 0.2 s) to run ten
# times or more, so the rate does not depend on where the window starts.
STEADY_WINDOW_S = 20.0
# After convergence the group is watched this long to be sure it stays converged.
SETTLE_S = TIMINGS.rebalance_interval_s
# A change not converged by then is reported as such (and the run goes on without the
# remaining changes): a group that cannot converge must still give its figures.
CONVERGE_TIMEOUT_S = 45.0
# The scripts a converged, idle group runs: lock renewals and heartbeats.
IDLE_SCRIPTS = ("lock", "heartbeat")
REPORTED_TIMINGS = (
    "rebalance_interval_s",
    "lock_renew_interval_s",
    "client_lock_expiry_s",
    "lock_ttl_s",
    "membership_poll_s",
    "heartbeat_interval_s",
    "heartbeat_timeout_s",
    "poll_block_s",
)

TARGETS = {
    "converge_intervals": 2.0,
    "double_owned_max": 0,
    # Share of the main configuration's rate the consumers x queues term of the fit
    # explains: "grows with queues, not with consumers x queues".
    "product_term_share": 0.1,
}


# -- the consumers ---------------------------------------------------------------------
class Fleet:
    """The consumers of one configuration, all in this process. Consumers being stopped
    (or stopped) stay visible to the sampler until all their workers ended."""

    def __init__(self, url: str, label: str, topic: str, group: str) -> None:
        self.url = url
        self.label = label
        self.sub = Subscription(
            topic, group, HANDLER, model=Model.CLUSTERING, ordering=Ordering.QUEUE
        )
        self.live: dict[str, Consumer] = {}
        self.gone: dict[str, Consumer] = {}
        self._lock = threading.Lock()
        self._count = 0

    def next_ids(self, n: int) -> list[str]:
        """Ids of the next ``n`` consumers; zero-padded, so they sort as they number."""
        return [f"{self.label}-c{self._count + i:04d}" for i in range(n)]

    def add(self, ids: list[str]) -> None:
        for cid in ids:
            consumer = Consumer(
                self.url,
                [self.sub],
                timings=TIMINGS,
                consumer_id=cid,
                handlers={HANDLER: noop},
            )
            consumer.start()
            with self._lock:
                self.live[cid] = consumer
            self._count += 1

    def remove(self, ids: list[str]) -> None:
        """Stop ``ids`` at once, a thread each (a graceful stop), and wait for them."""
        with self._lock:
            leaving = {cid: self.live.pop(cid) for cid in ids}
            self.gone.update(leaving)
        threads = [threading.Thread(target=c.stop) for c in leaving.values()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with self._lock:
            for cid, consumer in leaving.items():
                if all(w.state == "stopped" for _, w in _workers(consumer)):
                    del self.gone[cid]

    def remove_all(self) -> None:
        self.remove(sorted(self.live))

    def live_ids(self) -> list[str]:
        with self._lock:
            return sorted(self.live)

    def consumers(self) -> list[tuple[str, Consumer]]:
        with self._lock:
            return [*self.live.items(), *self.gone.items()]


def _runners(consumer: Consumer) -> list[SubscriptionRunner]:
    return list(consumer.runners)


def _workers(consumer: Consumer) -> Iterator[tuple[int, QueueWorker]]:
    for runner in _runners(consumer):
        yield from list(runner.workers.items())
        yield from list(runner.retiring.items())


def allocation(queues: int, members: list[str]) -> dict[int, str]:
    """Queue -> owner as every consumer computes it (AverageAllocation)."""
    strategy = AverageAllocation()
    owners: dict[int, str] = {}
    for member in members:
        for q in strategy.allocate(range(queues), members, member):
            owners[q] = member
    return owners


# -- sampling ------------------------------------------------------------------------
@dataclass(frozen=True)
class Held:
    """A worker seen owning its queue (not yet stopped) in one sample."""

    queue: int
    consumer: str
    worker: QueueWorker
    dropped: bool


def _running(worker: QueueWorker) -> bool:
    return worker.state != "stopped"


@dataclass
class Watch:
    """One change being watched: the expected owners and when they were first seen."""

    expected: dict[int, str]
    since: float
    converged_at: float | None = None
    broken_after: bool = False  # a later sample saw it unconverged again
    acted: bool = False  # the change was made: every expected member is running
    registered_min: int | None = None  # fewest live registry members seen since


@dataclass
class SampleStats:
    count: int = 0
    redis_count: int = 0
    gaps: list[float] = field(default_factory=list)
    double_owned_memory_max: int = 0
    double_owned_redis_max: int = 0
    running_without_live_lock_max: int = 0
    rss_mb_max: int = 0
    threads_max: int = 0
    # Why workers ended (``QueueWorker.stop_reason``): rebalance and shutdown are
    # hand-overs; "redis unavailable" is a worker abandoned on a connection error.
    ended: Counter[str] = field(default_factory=Counter)


class Sampler:
    """Samples ownership every ``SAMPLE_S`` on its own thread (see the module docstring);
    tells when the watched change converged and whether the group stayed converged."""

    def __init__(self, fleet: Fleet, url: str, queues: int) -> None:
        self.fleet = fleet
        self.queues = queues
        self.stats = SampleStats()
        self._client = redis.Redis.from_url(url)
        self._lock_keys = [
            keys.lock(QueueRef(fleet.sub.topic, q), fleet.sub.group) for q in range(queues)
        ]
        self._registry = keys.registry(fleet.sub.topic, fleet.sub.group)
        self._tracked: dict[QueueWorker, str] = {}
        self._ended: weakref.WeakSet[QueueWorker] = weakref.WeakSet()
        self._watch: Watch | None = None
        self._redis_on = True
        self._redis_lock = threading.Lock()  # held while the Redis side of a sample runs
        self._stop = threading.Event()
        self._stable = True  # memory converged in every sample since ``mark_stable``
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

    def watch(self, expected: dict[int, str]) -> Watch:
        self._watch = Watch(expected, time.monotonic())
        return self._watch

    def wait_converged(self, watch: Watch, timeout: float) -> bool:
        """Wait up to ``timeout`` from now (the change was made: starting hundreds of
        consumers may itself take longer than the timeout)."""
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
        held = self._observe()
        owners: dict[int, str] | None = None
        with self._redis_lock:
            if self._redis_on:
                owners = self._lock_owners()
        self._count_double_owned(held, owners)
        memory_ok = watch is not None and self._memory_converged(held, watch.expected)
        if watch is not None and self._redis_on:
            converged = memory_ok and owners == watch.expected
            if converged and watch.converged_at is None:
                watch.converged_at = time.monotonic()
            elif not converged and watch.converged_at is not None and owners is not None:
                watch.broken_after = True
        if not memory_ok:
            self._stable = False
        self._note_process()

    def _observe(self) -> list[Held]:
        """Every worker not yet stopped, in the order its state was read. A worker once seen
        is followed until it stopped, so one moving between a runner's maps is not missed."""
        for cid, consumer in self.fleet.consumers():
            for _, worker in _workers(consumer):
                if worker not in self._ended:
                    self._tracked.setdefault(worker, cid)
        held: list[Held] = []
        for worker, cid in list(self._tracked.items()):
            if not _running(worker):
                del self._tracked[worker]
                self._ended.add(worker)
                self.stats.ended[worker.stop_reason or "unknown"] += 1
                continue
            held.append(Held(worker.ref.queue, cid, worker, worker.dropped))
        return held

    def _lock_owners(self) -> dict[int, str]:
        """Queue -> owner of every lock live now on the Redis clock."""
        pipe = self._client.pipeline(transaction=False)
        pipe.time()
        pipe.zcard(self._registry)
        for key in self._lock_keys:
            pipe.hmget(key, "owner", "expires_at")
        (seconds, micros), registered, *rows = pipe.execute()
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        self.stats.redis_count += 1
        watch = self._watch
        if watch is not None and watch.acted:
            low = watch.registered_min
            watch.registered_min = registered if low is None else min(low, registered)
        return {
            q: owner.decode()
            for q, (owner, expires) in enumerate(rows)
            if owner and int(expires or 0) > now_ms
        }

    def _count_double_owned(self, held: list[Held], owners: dict[int, str] | None) -> None:
        by_queue: dict[int, list[Held]] = defaultdict(list)
        for h in held:
            by_queue[h.queue].append(h)
        # Read after the Redis sample: a worker still running now was running then.
        memory = sum(1 for hs in by_queue.values() if _overlapped(hs))
        stats = self.stats
        stats.count += 1
        stats.double_owned_memory_max = max(stats.double_owned_memory_max, memory)
        if owners is None:
            return
        conflicting: set[int] = set()
        unlocked: set[int] = set()
        for h in held:
            if h.dropped or h.worker.dropped or not _running(h.worker):
                continue
            owner = owners.get(h.queue)
            if owner is None:
                unlocked.add(h.queue)
            elif owner != h.consumer:
                conflicting.add(h.queue)
        stats.double_owned_redis_max = max(stats.double_owned_redis_max, len(conflicting))
        stats.running_without_live_lock_max = max(
            stats.running_without_live_lock_max, len(unlocked)
        )

    def _memory_converged(self, held: list[Held], expected: dict[int, str]) -> bool:
        if len(held) != self.queues or any(h.dropped for h in held):
            return False
        return {h.queue: h.consumer for h in held} == expected

    def _note_process(self) -> None:
        stats = self.stats
        if stats.count % 20 == 1:  # about once a second: /proc reads are not free
            stats.rss_mb_max = max(stats.rss_mb_max, _status_mb("VmRSS"))
        stats.threads_max = max(stats.threads_max, threading.active_count())


def _overlapped(hs: list[Held]) -> bool:
    """Two consumers owned the queue at one instant: a worker read earlier is still
    running now, after another consumer's worker was seen running."""
    return any(
        hs[i].consumer != hs[j].consumer and _running(hs[i].worker)
        for j in range(1, len(hs))
        for i in range(j)
    )


def _status_mb(field_name: str) -> int:
    """A ``/proc/self/status`` memory figure (VmRSS, VmHWM) in MB."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(f"{field_name}:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


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
    logger = logging.getLogger("workers.outage")
    logger.addHandler(handler)
    try:
        yield handler.causes
    finally:
        logger.removeHandler(handler)


# -- phases --------------------------------------------------------------------------
def converge(
    sampler: Sampler, change: str, members: list[str], act: Callable[[], None]
) -> dict[str, Any]:
    """Expect ``members`` to be the live group, run ``act`` (the change), wait for
    convergence and then watch it hold for ``SETTLE_S``."""
    before = sampler.expected
    expected = allocation(sampler.queues, members)
    watch = sampler.watch(expected)
    act()
    acted_s = time.monotonic() - watch.since
    watch.acted = True
    converged = sampler.wait_converged(watch, CONVERGE_TIMEOUT_S)
    if converged:
        time.sleep(SETTLE_S)
    seconds = (watch.converged_at or time.monotonic()) - watch.since
    result: dict[str, Any] = {
        "change": change,
        "consumers": len(members),
        "converged": converged,
        "converge_s": round(seconds, 3),
        "converge_intervals": round(seconds / TIMINGS.rebalance_interval_s, 2),
        "queues_moved": sum(1 for q, owner in expected.items() if before.get(q) != owner),
        "stayed_converged": converged and not watch.broken_after,
        # Starting the new consumers one by one, or stopping the leavers in parallel.
        "act_s": round(acted_s, 3),
        # Fewest members in the group's registry once the change was made: below
        # ``consumers``, a live member missed its heartbeat timeout and was evicted.
        "registered_min": watch.registered_min,
    }
    return result


def script_inner_commands() -> frozenset[str]:
    """Commands the scripts of an idle group run (``lock.lua`` renewals, ``heartbeat.lua``):
    ``INFO commandstats`` counts them besides the EVALSHA that ran them, though no client
    sent them. No client of an idle group sends any of them itself."""
    names: set[str] = set()
    for name in IDLE_SCRIPTS:
        names.update(m.lower() for m in re.findall(r"redis\.p?call\('(\w+)'", source(name)))
    return frozenset(names)


def commandstats(client: redis.Redis) -> dict[str, int]:
    raw = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in raw.items()}


def redis_cpu_s(client: redis.Redis) -> float:
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def steady_state(
    sampler: Sampler, client: redis.Redis, consumers: int, queues: int
) -> dict[str, Any]:
    """Commands per second over ``STEADY_WINDOW_S`` of a converged group, by command.
    ``cmds_per_s`` counts what clients sent (an EVALSHA once); the commands its script ran
    are listed by command too and added in ``cmds_per_s_with_script_inner``."""
    with sampler.without_redis():
        before, cpu_before, own_before = commandstats(client), redis_cpu_s(client), os.times()
        began = time.monotonic()
        time.sleep(STEADY_WINDOW_S)
        elapsed = time.monotonic() - began
        after, cpu_after, own_after = commandstats(client), redis_cpu_s(client), os.times()
        stayed = sampler.stable
    clients = int(client.info("clients")["connected_clients"])
    rates = {
        name: round((calls - before.get(name, 0)) / elapsed, 1)
        for name, calls in sorted(after.items())
        if name != "info" and calls > before.get(name, 0)
    }
    inner = script_inner_commands()
    total = sum(rate for name, rate in rates.items() if name not in inner)
    own_cpu = (own_after.user + own_after.system) - (own_before.user + own_before.system)
    return {
        "consumers": consumers,
        "queues": queues,
        "window_s": round(elapsed, 2),
        "cmds_per_s": round(total, 1),
        "cmds_per_s_with_script_inner": round(sum(rates.values()), 1),
        "cmds_per_s_by_command": rates,
        "script_inner_commands": sorted(inner & set(rates)),
        "model_cmds_per_s": round(model_rate(consumers, queues), 1),
        "cmds_per_s_per_queue": round(total / queues, 2),
        "redis_cpu_cores": round((cpu_after - cpu_before) / elapsed, 3),
        "benchmark_process_cpu_cores": round(own_cpu / elapsed, 3),
        "redis_connected_clients": clients,
        "stayed_converged": stayed,
    }


def model_rate(consumers: int, queues: int) -> float:
    """What the runtime is built to send when idle: per queue a renewal every renew
    interval and an XRANGE + blocking XREAD every read timeout; per consumer a heartbeat
    script every membership poll, its card (SET + SADD) every heartbeat interval and the
    SCRIPT EXISTS redis-py sends ahead of every pipeline of scripts (the renewal batch)."""
    t = TIMINGS
    per_queue = 1 / t.lock_renew_interval_s + 2 / t.poll_block_s
    per_consumer = (
        1 / t.membership_poll_s + 2 / t.heartbeat_interval_s + 1 / t.lock_renew_interval_s
    )
    return queues * per_queue + consumers * per_consumer


# -- configurations ------------------------------------------------------------------
def configuration(url: str, label: str, consumers: int, queues: int, cycles: int) -> dict[str, Any]:
    """Start ``consumers`` on a topic of ``queues``, converge, measure the steady state,
    then ``cycles`` times remove a quarter and add a quarter back."""
    client = redis.Redis.from_url(url)
    topic = group = f"rebalance-{label}"
    create_topic(client, topic, queues)
    fleet = Fleet(url, label, topic, group)
    sampler = Sampler(fleet, url, queues)
    sampler.start()
    changes: list[dict[str, Any]] = []
    try:
        ids = fleet.next_ids(consumers)
        changes.append(converge(sampler, "start", ids, partial(fleet.add, ids)))
        steady = steady_state(sampler, client, consumers, queues)
        quarter = consumers // 4
        for _ in range(cycles if changes[0]["converged"] else 0):
            # Every fourth in sorted order: the leavers are spread over the member list.
            leaving = fleet.live_ids()[3::4][:quarter]
            staying = [c for c in fleet.live_ids() if c not in leaving]
            changes.append(converge(sampler, "remove", staying, partial(fleet.remove, leaving)))
            if not changes[-1]["converged"]:
                break
            joining = fleet.next_ids(quarter)
            members = sorted(staying + joining)
            changes.append(converge(sampler, "add", members, partial(fleet.add, joining)))
    finally:
        fleet.remove_all()
        sampler.stop()
        client.close()
    stats = sampler.stats
    return {
        "consumers": consumers,
        "queues": queues,
        "changes": changes,
        "steady_state": steady,
        "samples": {
            "count": stats.count,
            "with_redis_locks": stats.redis_count,
            "gap_ms_median": round(statistics.median(stats.gaps[1:] or [0.0]) * 1000, 1),
            "gap_ms_max": round(max(stats.gaps[1:], default=0.0) * 1000, 1),
        },
        "double_owned_max": {
            "memory": stats.double_owned_memory_max,
            "redis_locks": stats.double_owned_redis_max,
        },
        "running_without_live_lock_max": stats.running_without_live_lock_max,
        "workers_ended_by_reason": dict(stats.ended),
        "rss_mb_max": stats.rss_mb_max,
        "threads_max": stats.threads_max,
    }


def fit(points: list[tuple[int, int, float]]) -> dict[str, float]:
    """Solve ``rate = a*queues + b*consumers + c*consumers*queues`` through three
    (consumers, queues, rate) points (Cramer's rule)."""
    rows: list[list[float]] = [[q, c, c * q] for c, q, _ in points]
    rhs = [r for _, _, r in points]

    def det(m: list[list[float]]) -> float:
        return (
            m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
        )

    d = det(rows)
    coefficients = []
    for col in range(3):
        m = [[rhs[i] if j == col else rows[i][j] for j in range(3)] for i in range(3)]
        coefficients.append(det(m) / d)
    a, b, c = coefficients
    return {"per_queue": a, "per_consumer": b, "per_consumer_queue": c}


def scaling(steady: list[dict[str, Any]]) -> dict[str, Any]:
    main, fewer_queues, fewer_consumers = steady
    coefficients = fit([(s["consumers"], s["queues"], s["cmds_per_s"]) for s in steady])
    product = coefficients["per_consumer_queue"] * main["consumers"] * main["queues"]
    return {
        "fit": {k: round(v, 4) for k, v in coefficients.items()},
        "fit_formula": "cmds_per_s = per_queue*queues + per_consumer*consumers "
        "+ per_consumer_queue*consumers*queues",
        "product_term_share": round(product / main["cmds_per_s"], 4),
        "rate_ratio_for_4x_queues": round(main["cmds_per_s"] / fewer_queues["cmds_per_s"], 2),
        "rate_ratio_for_4x_consumers": round(main["cmds_per_s"] / fewer_consumers["cmds_per_s"], 2),
    }


def run(consumers: int = 200, queues: int = 1024, repeats: int = 1) -> dict[str, Any]:
    started = time.monotonic()
    with private_redis() as url, counting_outages() as outages:
        main = configuration(url, "main", consumers, queues, repeats)
        fewer_queues = configuration(url, "q4", consumers, queues // 4, 0)
        fewer_consumers = configuration(url, "c4", consumers // 4, queues, 0)
    configs = [main, fewer_queues, fewer_consumers]
    changes = [c for cfg in configs for c in cfg["changes"]]
    by_source = {
        source: max(cfg["double_owned_max"][source] for cfg in configs)
        for source in ("memory", "redis_locks")
    }
    double_owned = max(by_source.values())
    converge_intervals = max(c["converge_intervals"] for c in changes)
    steady = [cfg["steady_state"] for cfg in configs]
    scale = scaling(steady)
    result: dict[str, Any] = {
        "consumers": consumers,
        "queues": queues,
        "repeats": repeats,
        "timings": {name: getattr(TIMINGS, name) for name in REPORTED_TIMINGS},
        "sample_interval_s": SAMPLE_S,
        "ownership_sources": ["memory", "redis_locks"],
        "changes": main["changes"],
        "converge_s_max": max(c["converge_s"] for c in changes),
        "converge_intervals_max": converge_intervals,
        "all_converged": all(c["converged"] and c["stayed_converged"] for c in changes),
        "double_owned_max": double_owned,
        "double_owned_max_by_source": by_source,
        "running_without_live_lock_max": max(
            cfg["running_without_live_lock_max"] for cfg in configs
        ),
        "steady_state": steady,
        "scaling": scale,
        "configurations": [
            {k: v for k, v in cfg.items() if k != "steady_state"} for cfg in configs
        ],
        "workers_ended_by_reason": dict(
            sum((Counter(cfg["workers_ended_by_reason"]) for cfg in configs), Counter())
        ),
        "redis_outages_logged": dict(outages),
        "peak_rss_mb": _status_mb("VmHWM"),
        "threads_max": max(cfg["threads_max"] for cfg in configs),
    }
    result["targets"] = TARGETS
    result["targets_met"] = {
        "converge_intervals": converge_intervals <= TARGETS["converge_intervals"]
        and result["all_converged"],
        "double_owned_max": double_owned <= TARGETS["double_owned_max"],
        "product_term_share": abs(scale["product_term_share"]) <= TARGETS["product_term_share"],
    }
    result["benchmark_seconds"] = round(time.monotonic() - started, 1)
    return result
