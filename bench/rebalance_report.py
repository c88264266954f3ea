"""Steady-state command rates of the rebalance benchmark (bench/rebalance.py) and the fit
that tells whether they grow with queues or with consumers x queues.

The rate is the ``INFO commandstats`` delta over a window of a converged, idle group, with
the sampler's Redis reads paused (they would count), by command and in total. Besides the
command count, the bytes the heartbeat script returns (the whole member list, to every
consumer, every membership poll) grow with consumers^2: the window also reports the bytes
Redis received and sent (``INFO stats``), fitted like the commands.
"""

from __future__ import annotations

import math
import os
import re
import time
from typing import Any

import redis

from bench.rebalance_fleet import TIMINGS
from bench.rebalance_sampler import Sampler
from lockstep.workers import Timings
from lockstep.workers.broker import LOCK_KEYS_PER_CALL
from lockstep.workers.ordering.scheduler import READ_BLOCK_S
from lockstep.workers.scripts import source

# The scripts a converged, idle group runs: lock renewals and heartbeats.
IDLE_SCRIPTS = ("lock", "heartbeat")
# The network figures the window reads from ``INFO stats``.
NET_FIELDS = ("total_net_input_bytes", "total_net_output_bytes")


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


def net_bytes(client: redis.Redis) -> dict[str, int]:
    stats = client.info("stats")
    return {name: int(stats[name]) for name in NET_FIELDS}


def steady_state(
    sampler: Sampler, client: redis.Redis, consumers: int, queues: int, window_s: float
) -> dict[str, Any]:
    """Commands per second over ``window_s`` of a converged group, by command.
    ``cmds_per_s`` counts what clients sent (an EVALSHA once); the commands its script ran
    are listed by command too and added in ``cmds_per_s_with_script_inner``."""
    with sampler.without_redis():
        pids = sampler.fleet.pids()
        before, cpu_before, own_before = commandstats(client), redis_cpu_s(client), os.times()
        fleet_before = sum(process_cpu_s(pid) for pid in pids)
        net_before = net_bytes(client)
        began = time.monotonic()
        time.sleep(window_s)
        elapsed = time.monotonic() - began
        after, cpu_after, own_after = commandstats(client), redis_cpu_s(client), os.times()
        fleet_after = sum(process_cpu_s(pid) for pid in pids)
        net_after = net_bytes(client)
        stayed = sampler.stable
    clients = int(client.info("clients")["connected_clients"])
    rates = {
        name: round((calls - before.get(name, 0)) / elapsed, 1)
        for name, calls in sorted(after.items())
        if name not in ("info",) and calls > before.get(name, 0)
    }
    inner = script_inner_commands()
    total = sum(rate for name, rate in rates.items() if name not in inner)
    own_cpu = (own_after.user + own_after.system) - (own_before.user + own_before.system)
    net = {
        name.removeprefix("total_").removesuffix("_bytes") + "_bytes_per_s": round(
            (net_after[name] - net_before[name]) / elapsed
        )
        for name in NET_FIELDS
    }
    return {
        "consumers": consumers,
        "queues": queues,
        "window_s": round(elapsed, 2),
        "cmds_per_s": round(total, 1),
        "cmds_per_s_with_script_inner": round(sum(rates.values()), 1),
        "cmds_per_s_by_command": rates,
        "script_inner_commands": sorted(inner & set(rates)),
        "model_cmds_per_s": round(
            model_rate(consumers, queues, sampler.fleet.timings, sampler.fleet.real_workers), 1
        ),
        "cmds_per_s_per_queue": round(total / queues, 2),
        **net,
        "redis_cpu_cores": round((cpu_after - cpu_before) / elapsed, 3),
        "benchmark_process_cpu_cores": round(own_cpu / elapsed, 3),
        "fleet_processes_cpu_cores": round((fleet_after - fleet_before) / elapsed, 3),
        "redis_connected_clients": clients,
        "stayed_converged": stayed,
    }


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (``/proc/<pid>/stat``)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def model_rate(
    consumers: int, queues: int, t: Timings = TIMINGS, real_workers: bool = True
) -> float:
    """What the benchmark's consumers (no consumer card) are built to send when idle: per
    consumer a heartbeat script every membership poll, every renew interval its renewal
    calls (``lock.lua`` over up to ``LOCK_KEYS_PER_CALL`` queues a call on a standalone
    Redis) after the SCRIPT EXISTS redis-py sends ahead of every pipeline of scripts, and
    with real workers its pool's one ``XREAD`` over every idle queue per
    ``READ_BLOCK_S``, however many queues it owns. A ``workers.Consumer`` adds its card
    (SET + SADD) every heartbeat interval."""
    held = math.ceil(queues / max(1, consumers))
    calls = math.ceil(held / LOCK_KEYS_PER_CALL)
    per_consumer = 1 / t.membership_poll_s + (1 + calls) / t.lock_renew_interval_s
    if real_workers:
        per_consumer += 1 / READ_BLOCK_S
    return consumers * per_consumer


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


def scaling(steady: list[dict[str, Any]], key: str = "cmds_per_s") -> dict[str, Any]:
    """The fit of ``key`` through the three configurations (main, a quarter of the queues,
    a quarter of the consumers) and the share of the main rate its product term explains."""
    main, fewer_queues, fewer_consumers = steady
    coefficients = fit([(s["consumers"], s["queues"], s[key]) for s in steady])
    product = coefficients["per_consumer_queue"] * main["consumers"] * main["queues"]
    return {
        "fit": {k: round(v, 4) for k, v in coefficients.items()},
        "fit_formula": f"{key} = per_queue*queues + per_consumer*consumers "
        "+ per_consumer_queue*consumers*queues",
        "product_term_share": round(product / main[key], 4),
        "ratio_for_4x_queues": round(main[key] / fewer_queues[key], 2),
        "ratio_for_4x_consumers": round(main[key] / fewer_consumers[key], 2),
    }
