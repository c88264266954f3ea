"""The consumers of the rebalance benchmark (bench/rebalance.py), spread over processes,
and the allocation they are expected to converge to.

One CPython process on two cores does not hold 200 consumers x 1,024 queues (about 2,000
threads): the GIL starves the control loops, consumers miss their heartbeat timeout, get
evicted and the group reshuffles forever (docs/rebalance.md). So the fleet runs in
``processes`` child processes (``multiprocessing``, spawn), each with a share of the
consumers. What runs per consumer, in its process:

- its own Redis connection pool (``runtime_client``) and ``Broker``;
- one ``SubscriptionRunner``: the runtime's own control loop (heartbeat.lua, membership
  polls, ``AverageAllocation``, lock.lua grants and renewals, hand-over on stop and on
  rebalance) and its owned queues' workers on a ``QueuePool``, as a ``workers.Consumer``
  runs them on a standalone Redis (a stepping thread per queue up to
  ``LOCKSTEP_QUEUE_THREADS``, one reader doing one ``XREAD`` over the idle queues);
- an ``EventLog`` created disabled (a null event sink: no flusher thread, nothing
  written) and no consumer card thread: a ``workers.Consumer`` starts both, the
  benchmark needs neither.

The queue workers are the runtime's queue-ordering workers, reading their streams
(``RecordingWorker``). ``real_workers=False`` runs ``IdleQueueWorker``s instead: the same
worker (lock token, ``restore`` from the stored offset, fenced ``finish``, unlock on
release) whose consume loop waits for its drop instead of reading, a thread each (how
the benchmark ran before issue #26, when every idle queue cost a thread and a blocking
``XREAD`` of its own).

Every worker also records when it believed it held a valid lock (each renewal: when it
was told, and the time the renewal was sent), when it was dropped and when it stopped.
Those are the ownership intervals the sampler (bench/rebalance_sampler.py) checks for
double ownership across processes. ``time.monotonic`` is ``CLOCK_MONOTONIC``, one clock
for every process of the machine, so the intervals of all processes compare directly.
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from collections import Counter
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from typing import Any

import lockstep.workers.rebalance
from bench.handlers import noop
from lockstep.workers import Subscription, Timings
from lockstep.workers.allocation import AverageAllocation
from lockstep.workers.broker import Broker
from lockstep.workers.config import Limits, Model, Ordering
from lockstep.workers.events import EventLog
from lockstep.workers.ordering import QueueOrderingWorker, WorkerEnv
from lockstep.workers.ordering.runner import Handed, Wait
from lockstep.workers.ordering.scheduler import QueuePool
from lockstep.workers.outage import runtime_client
from lockstep.workers.rebalance import SubscriptionRunner
from lockstep.workers.refs import QueueRef

HANDLER = "bench.handlers.noop"
# RocketMQ's 20 s rebalance / 20 s renewal / 30 s client expiry / 60 s lock TTL.
ROCKETMQ = Timings(
    rebalance_interval_s=20.0,
    lock_renew_interval_s=20.0,
    client_lock_expiry_s=30.0,
    lock_ttl_s=60.0,
)


def timings(scale: float = 10.0) -> Timings:
    """RocketMQ's rebalance and lock timings divided by ``scale`` (10: a run takes
    minutes); every ratio the runtime relies on is kept."""
    return replace(
        ROCKETMQ,
        rebalance_interval_s=ROCKETMQ.rebalance_interval_s / scale,
        lock_renew_interval_s=ROCKETMQ.lock_renew_interval_s / scale,
        client_lock_expiry_s=ROCKETMQ.client_lock_expiry_s / scale,
        lock_ttl_s=ROCKETMQ.lock_ttl_s / scale,
        # A leave is seen within a tenth of an interval (production: 1 s of 20 s, a
        # twentieth). Shorter would make every consumer read the whole member list
        # (consumers^2 bytes) too often.
        membership_poll_s=2.0 / scale,
        # Six beats per timeout (the defaults have five) and a timeout of 30 s / scale
        # rather than 15 s / scale: hundreds of threads on two shared cores can delay a
        # beat by a second, and a member evicted by mistake would reshuffle every queue.
        heartbeat_interval_s=5.0 / scale,
        heartbeat_timeout_s=30.0 / scale,
    )


TIMINGS = timings(10.0)


# -- the queue workers -------------------------------------------------------------------
class RecordingWorker(QueueOrderingWorker):
    """The runtime's queue-ordering worker, recording its ownership: every renewal (when
    the worker was told, the time it was sent), its drop and its stop, on the machine's
    monotonic clock. The moment is taken before the base class acts, so the recorded
    ownership never starts later than the worker's belief does."""

    def __init__(self, env: WorkerEnv, ref: QueueRef, token: int | None) -> None:
        created = time.monotonic()
        super().__init__(env, ref, token)
        self.last_locked = created
        self.renewals: list[tuple[float, float]] = [(created, created)]
        self.dropped_at: float | None = None
        self.stopped_at: float | None = None
        RECORDED.append(self)

    def renewed(self, at: float) -> None:
        self.renewals.append((time.monotonic(), at))
        super().renewed(at)

    def drop(self, reason: str, *, release_lock: bool = True) -> None:
        if self.dropped_at is None:
            self.dropped_at = time.monotonic()
        super().drop(reason, release_lock=release_lock)

    def abandon(self, reason: str) -> None:
        if self.dropped_at is None:
            self.dropped_at = time.monotonic()
        super().abandon(reason)

    def _release(self) -> None:
        # ``finish`` returned: nothing more is invoked or written. The base class sets the
        # state to ``stopped`` first thing, then unlocks (only after which a successor can
        # be granted the lock).
        self.stopped_at = time.monotonic()
        ENDED[self.stop_reason or "unknown"] += 1
        super()._release()

    def valid_segments(self) -> list[tuple[float, float]]:
        """When this worker was not stopped and believed its lock valid: after a renewal
        told at ``c`` (sent at ``at``) and until the next one is told, while ``now - at <
        client_lock_expiry_s``."""
        expiry = self.env.timings.client_lock_expiry_s
        end_of_life = self.stopped_at if self.stopped_at is not None else time.monotonic()
        out: list[tuple[float, float]] = []
        renewals = list(self.renewals)
        for i, (told, at) in enumerate(renewals):
            until = renewals[i + 1][0] if i + 1 < len(renewals) else end_of_life
            end = min(until, at + expiry, end_of_life)
            if end > told:
                out.append((told, end))
        return out


class IdleQueueWorker(RecordingWorker):
    """A queue-ordering worker of a queue nobody produces to: it waits for its drop
    instead of polling the stream. Everything else is the real worker's."""

    def consume(self) -> Generator[Wait, Handed, None]:
        self.state = "idle"
        while not self.stopping.is_set():
            yield Wait(None)  # until a poke: the drop


# Why this process's workers ended (``QueueWorker.stop_reason``).
ENDED: Counter[str] = Counter()
# Every worker this process made, for its ownership intervals.
RECORDED: list[RecordingWorker] = []


# -- one process's consumers -------------------------------------------------------------
@dataclass
class Member:
    """One consumer as the benchmark runs it: a client, a broker, a disabled event log and
    one subscription runner."""

    consumer_id: str
    runner: SubscriptionRunner
    client: Any

    def stop(self) -> None:
        self.runner.stop(self.runner.env.timings.shutdown_timeout_s)
        self.client.close()


@dataclass
class LocalFleet:
    """The consumers of one child process."""

    url: str
    sub: Subscription
    timings: Timings
    real_workers: bool = True
    live: dict[str, Member] = field(default_factory=dict)
    gone: dict[str, Member] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, ids: list[str]) -> None:
        """Build every consumer first, then start them one right after the other."""
        members: list[Member] = []
        for cid in ids:
            client = runtime_client(self.url, consumer_id=cid)
            threads = Limits.from_env().queue_threads
            env = WorkerEnv(
                self.sub,
                Broker(client),
                EventLog(client, enabled=False),
                self.timings,
                cid,
                noop,
                self.sub.group,
                runner=QueuePool(client, threads, cid) if self.real_workers else None,
            )
            members.append(Member(cid, SubscriptionRunner(env), client))
        for member in members:
            member.runner.start()
            with self.lock:
                self.live[member.consumer_id] = member

    def remove(self, ids: list[str]) -> None:
        """Stop ``ids`` at once, a thread each (a graceful stop), and wait for them."""
        with self.lock:
            leaving = [self.live.pop(cid) for cid in ids if cid in self.live]
            self.gone.update({m.consumer_id: m for m in leaving})
        threads = [threading.Thread(target=m.stop) for m in leaving]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def members(self) -> list[Member]:
        with self.lock:
            return [*self.live.values(), *self.gone.values()]

    def snapshot(self) -> dict[str, Any]:
        """Every worker not yet stopped: owning and not dropped (the ones a converged
        group has exactly one of per queue), and the others (dropped or stale)."""
        began = time.monotonic()
        owning: list[tuple[int, str]] = []
        others: list[tuple[int, str, bool]] = []  # (queue, consumer, owning)
        for member in self.members():
            runner = member.runner
            for worker in [*list(runner.workers.values()), *list(runner.retiring.values())]:
                if worker.state == "stopped":
                    continue
                valid = worker.lock_valid()
                if valid and not worker.dropped:
                    owning.append((worker.ref.queue, member.consumer_id))
                else:
                    others.append((worker.ref.queue, member.consumer_id, valid))
        return {
            "t0": began,
            "t1": time.monotonic(),
            "owning": owning,
            "others": others,
            "threads": threading.active_count(),
            "rss_mb": status_mb("VmRSS"),
        }

    def intervals(self) -> list[tuple[int, str, float, float, float | None]]:
        """(queue, consumer, start, end, dropped_at) of every valid-lock segment of every
        worker this process ran."""
        return [
            (w.ref.queue, w.env.consumer_id, start, end, w.dropped_at)
            for w in list(RECORDED)
            for start, end in w.valid_segments()
        ]


def _serve_probe(probe: Connection, fleet: LocalFleet) -> None:
    while True:
        try:
            request = probe.recv()
        except EOFError:
            return
        if request == "snapshot":
            probe.send(fleet.snapshot())


def serve(
    ctl: Connection,
    probe: Connection,
    url: str,
    sub: Subscription,
    timings_: Timings,
    real_workers: bool,
) -> None:
    """A child process: runs its consumers as told on ``ctl`` (add, remove, report, quit);
    answers the sampler's snapshots on ``probe`` from another thread."""
    from bench.rebalance_sampler import counting_outages

    logging.basicConfig(level=logging.WARNING)
    cls = RecordingWorker if real_workers else IdleQueueWorker
    # The runtime makes a queue's worker through ``workers.rebalance.worker_for``: this
    # process runs only the benchmark's consumers.
    lockstep.workers.rebalance.worker_for = cls
    fleet = LocalFleet(url, sub, timings_, real_workers)
    threading.Thread(target=_serve_probe, args=(probe, fleet), daemon=True).start()
    ctl.send("ready")
    with counting_outages() as outages:
        while True:
            command, arg = ctl.recv()
            if command == "add":
                fleet.add(arg)
                ctl.send(None)
            elif command == "remove":
                fleet.remove(arg)
                ctl.send(None)
            elif command == "quit":
                fleet.remove(list(fleet.live))
                ctl.send(
                    {
                        "intervals": fleet.intervals(),
                        "ended": dict(ENDED),
                        "outages": dict(outages),
                        "peak_rss_mb": status_mb("VmHWM"),
                    }
                )
                return


def status_mb(field_name: str) -> int:
    """A ``/proc/self/status`` memory figure (VmRSS, VmHWM) in MB."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(f"{field_name}:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


# -- the parent's side -------------------------------------------------------------------
@dataclass
class Child:
    process: Any
    ctl: Connection
    probe: Connection
    live: set[str] = field(default_factory=set)


class Fleet:
    """The consumers of one configuration, in ``processes`` child processes. Consumer
    number ``n`` of the start goes to process ``(n + n // processes) % processes`` (so
    every fourth consumer, the leavers of a removal, is spread over the processes);
    later ones to the process with the fewest live consumers."""

    def __init__(
        self,
        url: str,
        label: str,
        topic: str,
        group: str,
        *,
        processes: int = 4,
        timings_: Timings = TIMINGS,
        real_workers: bool = True,
    ) -> None:
        self.url = url
        self.label = label
        self.timings = timings_
        self.real_workers = real_workers
        self.sub = Subscription(
            topic, group, HANDLER, model=Model.CLUSTERING, ordering=Ordering.QUEUE
        )
        self._count = 0
        self._probe_lock = threading.Lock()
        ctx = multiprocessing.get_context("spawn")
        self.children: list[Child] = []
        for i in range(processes):
            ctl, child_ctl = ctx.Pipe()
            probe, child_probe = ctx.Pipe()
            process = ctx.Process(
                target=serve,
                args=(child_ctl, child_probe, url, self.sub, timings_, real_workers),
                name=f"bench-fleet-{label}-{i}",
                daemon=True,
            )
            process.start()
            self.children.append(Child(process, ctl, probe))
        # Booted (imports done) before any change is timed.
        for child in self.children:
            child.ctl.recv()
        self.reports: list[dict[str, Any]] = []

    def next_ids(self, n: int) -> list[str]:
        """Ids of the next ``n`` consumers; zero-padded, so they sort as they number."""
        return [f"{self.label}-c{self._count + i:04d}" for i in range(n)]

    def add(self, ids: list[str]) -> None:
        p = len(self.children)
        share: dict[int, list[str]] = {}
        for cid in ids:
            n = int(cid.rsplit("c", 1)[1])
            i = min(range(p), key=lambda i: (len(self.children[i].live), (i - n - n // p) % p))
            self.children[i].live.add(cid)
            share.setdefault(i, []).append(cid)
            self._count += 1
        self._all("add", share)

    def remove(self, ids: list[str]) -> None:
        share: dict[int, list[str]] = {}
        for i, child in enumerate(self.children):
            mine = [cid for cid in ids if cid in child.live]
            child.live.difference_update(mine)
            if mine:
                share[i] = mine
        self._all("remove", share)

    def _all(self, command: str, share: dict[int, list[str]]) -> None:
        for i, arg in share.items():
            self.children[i].ctl.send((command, arg))
        for i in share:
            self.children[i].ctl.recv()

    def live_ids(self) -> list[str]:
        return sorted(cid for child in self.children for cid in child.live)

    def pids(self) -> list[int]:
        return [child.process.pid for child in self.children]

    def snapshot(self) -> list[dict[str, Any]]:
        """One snapshot per process, asked of all at once."""
        with self._probe_lock:
            for child in self.children:
                child.probe.send("snapshot")
            return [child.probe.recv() for child in self.children]

    def close(self) -> list[dict[str, Any]]:
        """Stop every consumer; each process's report (ownership intervals, why workers
        ended, outages, peak RSS)."""
        for child in self.children:
            child.ctl.send(("quit", None))
            child.live.clear()
        with self._probe_lock:
            self.reports = [child.ctl.recv() for child in self.children]
            for child in self.children:
                child.probe.close()
                child.ctl.close()
                child.process.join(10)
        return self.reports


def allocation(queues: int, members: list[str]) -> dict[int, str]:
    """Queue -> owner as every consumer computes it (AverageAllocation)."""
    strategy = AverageAllocation()
    owners: dict[int, str] = {}
    for member in members:
        for q in strategy.allocate(range(queues), members, member):
            owners[q] = member
    return owners


def iter_segments(
    reports: list[dict[str, Any]],
) -> Iterator[tuple[int, str, float, float, float | None]]:
    for report in reports:
        yield from report["intervals"]
