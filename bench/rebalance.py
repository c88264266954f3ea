"""Rebalance at scale (issue 15): many consumers of one topic.

Every consumer runs the runtime's own ``SubscriptionRunner`` (one clustering subscription,
queue ordering, no-op handler) with its own connection pool, all against one private
redis-server, spread over ``processes`` child processes; its queue workers skip the idle
stream reads, and it has no event-log or card thread (bench/rebalance_fleet.py says what
runs). One run measures three configurations:

- the main one (``consumers`` x ``queues``): start every consumer and wait until the group
  converged; measure the steady-state command rate; then, ``repeats`` times, stop a
  quarter of the consumers (graceful stop) and, once converged, add a quarter back;
- the same consumers with a quarter of the queues, and a quarter of the consumers with
  the same queues: start, converge, measure the steady-state rate. With the main one they
  give three points to fit ``rate = a*queues + b*consumers + c*consumers*queues``
  (bench/rebalance_report.py).

*Converged* means: every queue is owned by exactly one worker, the one of the consumer that
``AverageAllocation`` over the sorted live member ids gives it; no other worker (handed
over, lost) is still running anywhere; and Redis holds a live lock on every queue for
that same consumer. The time to converge runs from the change (the first start, the first
stop) to the first sample that sees it (``converge_s``); ``after_act_s`` runs from when
the change was complete (the last consumer started, every leaver stopped).

Convergence is sampled every 50 ms from the processes' workers and from the Redis locks;
double ownership is checked from every worker's recorded ownership intervals and against
the sampled Redis locks (bench/rebalance_sampler.py, which defines "owned twice at once").
See docs/rebalance.md for the figures and what they mean.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

from bench.common import private_redis
from bench.rebalance_fleet import TIMINGS, Fleet, allocation, timings
from bench.rebalance_report import scaling, steady_state
from bench.rebalance_sampler import SAMPLE_S, Sampler
from lockstep.workers import Timings, create_topic
from lockstep.workers.connection import connect

# Long enough for every periodic call (renewal 2 s, beat 0.5 s, poll 0.2 s) to run ten
# times or more, so the rate does not depend on where the window starts.
STEADY_WINDOW_S = 20.0
# After convergence the group is watched this many rebalance intervals to be sure it
# stays converged.
SETTLE_INTERVALS = 1.0
# Processes the consumers are spread over: ``run``'s argument, else this environment
# variable, else 4.
PROCESSES_ENV = "BENCH_REBALANCE_PROCESSES"
# A change not converged by then is reported as such (and the run goes on without the
# remaining changes): a group that cannot converge must still give its figures.
CONVERGE_TIMEOUT_S = 45.0
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


# -- phases --------------------------------------------------------------------------
def converge(
    sampler: Sampler, change: str, members: list[str], act: Callable[[], None]
) -> dict[str, Any]:
    """Expect ``members`` to be the live group, run ``act`` (the change), wait for
    convergence and then watch it hold for ``SETTLE_INTERVALS``."""
    interval = sampler.fleet.timings.rebalance_interval_s
    before = sampler.expected
    expected = allocation(sampler.queues, members)
    watch = sampler.watch(expected, len(members))
    act()
    watch.acted_at = time.monotonic()
    converged = sampler.wait_converged(watch, CONVERGE_TIMEOUT_S)
    if converged:
        time.sleep(SETTLE_INTERVALS * interval)
    seconds = (watch.converged_at or time.monotonic()) - watch.since
    after_act = max(0.0, (watch.converged_at or time.monotonic()) - watch.acted_at)
    return {
        "change": change,
        "consumers": len(members),
        "converged": converged,
        "converge_s": round(seconds, 3),
        "converge_intervals": round(seconds / interval, 2),
        # From the moment the change was complete (the last consumer started, every
        # leaver stopped): the protocol's own share of ``converge_s``.
        "after_act_s": round(after_act, 3),
        "after_act_intervals": round(after_act / interval, 2),
        "queues_moved": sum(1 for q, owner in expected.items() if before.get(q) != owner),
        "stayed_converged": converged and not watch.broken_after,
        # Starting the new consumers one by one, or stopping the leavers in parallel.
        "act_s": round(watch.acted_at - watch.since, 3),
        # Fewest members in the group's registry once the change was made and every
        # member had registered: below ``consumers``, a live member missed its heartbeat
        # timeout and was evicted.
        "registered_min": watch.registered_min,
    }


# -- configurations ------------------------------------------------------------------
def configuration(
    url: str,
    label: str,
    consumers: int,
    queues: int,
    cycles: int,
    processes: int = 4,
    timings_: Timings = TIMINGS,
    real_workers: bool = True,
) -> dict[str, Any]:
    """Start ``consumers`` on a topic of ``queues``, converge, measure the steady state,
    then ``cycles`` times remove a quarter and add a quarter back."""
    client = connect(url)
    topic = group = f"rebalance-{label}"
    create_topic(client, topic, queues)
    fleet = Fleet(
        url,
        label,
        topic,
        group,
        processes=processes,
        timings_=timings_,
        real_workers=real_workers,
    )
    sampler = Sampler(fleet, url, queues)
    sampler.start()
    changes: list[dict[str, Any]] = []
    steady: dict[str, Any] = {}
    try:
        ids = fleet.next_ids(consumers)
        changes.append(converge(sampler, "start", ids, partial(fleet.add, ids)))
        steady = steady_state(sampler, client, consumers, queues, STEADY_WINDOW_S)
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
        sampler.stop()
        sampler.finish(fleet.close())
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
        "double_owned_s": round(stats.double_owned_s, 3),
        "ownership_segments": stats.segments,
        "owned_queue_s": round(stats.owned_s, 1),
        "stale_overlap_max": stats.stale_overlap_max,
        "running_without_live_lock_max": stats.running_without_live_lock_max,
        "workers_ended_by_reason": dict(stats.ended),
        "redis_outages_logged": dict(stats.outages),
        "rss_mb_max": stats.rss_mb_max,
        "peak_rss_mb": stats.peak_rss_mb,
        "threads_max": stats.threads_max,
    }


def what_runs(real_workers: bool) -> str:
    workers = (
        "its queues' real queue-ordering workers (restore, stream reads, fenced finish, "
        "unlock) on the consumer's QueuePool: a stepping thread per queue up to "
        "LOCKSTEP_QUEUE_THREADS and one reader doing one XREAD over every idle queue"
        if real_workers
        else "a thread per owned queue running the queue-ordering worker's restore / "
        "fenced finish / unlock, waiting for its drop instead of reading"
    )
    return (
        "per consumer, in one of the child processes: its own connection pool, one "
        "SubscriptionRunner (heartbeat.lua, membership polls, AverageAllocation, lock.lua "
        f"grants and renewals, hand-over on stop and rebalance) and {workers}; no "
        "workers.Consumer: no event-log flusher (the event log is disabled) and no "
        "consumer card"
    )


def run(
    consumers: int = 200,
    queues: int = 1024,
    repeats: int = 1,
    processes: int | None = None,
    timings_scale: float = 10.0,
    real_workers: bool = True,
) -> dict[str, Any]:
    """``timings_scale``: RocketMQ's timings divided by it (10 by default);
    ``real_workers``: the runtime's queue workers reading their streams on each
    consumer's pool (else workers that wait for their drop without reading)."""
    started = time.monotonic()
    processes = processes or int(os.environ.get(PROCESSES_ENV) or 4)
    scale = timings_scale
    t = timings(scale)
    with private_redis() as url:
        main = configuration(url, "main", consumers, queues, repeats, processes, t, real_workers)
        fewer_queues = configuration(
            url, "q4", consumers, queues // 4, 0, processes, t, real_workers
        )
        fewer_consumers = configuration(
            url, "c4", consumers // 4, queues, 0, processes, t, real_workers
        )
    configs = [main, fewer_queues, fewer_consumers]
    changes = [c for cfg in configs for c in cfg["changes"]]
    by_source = {
        source: max(cfg["double_owned_max"][source] for cfg in configs)
        for source in ("memory", "redis_locks")
    }
    double_owned = max(by_source.values())
    converge_intervals = max(c["converge_intervals"] for c in changes)
    steady = [cfg["steady_state"] for cfg in configs]
    fitted = scaling(steady)
    result: dict[str, Any] = {
        "consumers": consumers,
        "queues": queues,
        "repeats": repeats,
        "timings_scale": scale,
        "timings": {name: getattr(t, name) for name in REPORTED_TIMINGS},
        "timings_note": "RocketMQ's 20 s rebalance / 20 s renewal / 30 s client expiry / "
        f"60 s lock TTL divided by {scale:g}; poll_block_s unused by idle queue workers",
        "processes": processes,
        "what_runs": what_runs(real_workers),
        "queue_workers": "real (reading their streams)" if real_workers else "idle (no reads)",
        "sample_interval_s": SAMPLE_S,
        "ownership_sources": ["memory", "redis_locks"],
        "double_ownership_check": "memory: every worker of every process records when it "
        "believed its client-side lock valid and was not stopped (renewals told, drop, "
        "stop, on the machine's one monotonic clock); a queue is owned twice at an instant "
        "when workers of two consumers both did, checked at every instant. redis_locks: a "
        "worker not dropped owning over the whole of a sampled read of the Redis locks "
        "that names another owner",
        "changes": main["changes"],
        "converge_s_max": max(c["converge_s"] for c in changes),
        "converge_intervals_max": converge_intervals,
        "after_act_intervals_max": max(c["after_act_intervals"] for c in changes),
        "all_converged": all(c["converged"] and c["stayed_converged"] for c in changes),
        "double_owned_max": double_owned,
        "double_owned_max_by_source": by_source,
        "double_owned_s": max(cfg["double_owned_s"] for cfg in configs),
        "stale_overlap_max": max(cfg["stale_overlap_max"] for cfg in configs),
        "running_without_live_lock_max": max(
            cfg["running_without_live_lock_max"] for cfg in configs
        ),
        "steady_state": steady,
        "scaling": fitted,
        "scaling_net_output_bytes": scaling(steady, "net_output_bytes_per_s"),
        "configurations": [
            {k: v for k, v in cfg.items() if k != "steady_state"} for cfg in configs
        ],
        "workers_ended_by_reason": dict(
            sum((Counter(cfg["workers_ended_by_reason"]) for cfg in configs), Counter())
        ),
        "redis_outages_logged": dict(
            sum((Counter(cfg["redis_outages_logged"]) for cfg in configs), Counter())
        ),
        "peak_rss_mb": max(cfg["peak_rss_mb"] for cfg in configs),
        "threads_max": max(cfg["threads_max"] for cfg in configs),
    }
    result["targets"] = TARGETS
    result["targets_met"] = {
        "converge_intervals": converge_intervals <= TARGETS["converge_intervals"]
        and result["all_converged"],
        "double_owned_max": double_owned <= TARGETS["double_owned_max"],
        "product_term_share": abs(fitted["product_term_share"]) <= TARGETS["product_term_share"],
    }
    result["benchmark_seconds"] = round(time.monotonic() - started, 1)
    return result
