"""``manage.py benchmark rebalance --consumers 6 --queues 16 --json`` runs the runtime's
subscription runners, spread over child processes, against the benchmark's own
redis-server and prints one JSON object: the convergence of the start and of each change,
the most queues ever owned twice (by the workers' ownership intervals and by the Redis
locks), and the steady-state command rates of three configurations. The consumers' queue
workers are the runtime's own, reading their streams on each consumer's pool
(bench/rebalance_fleet.py)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from bench import rebalance
from lockstep.workers.ordering.scheduler import READ_BLOCK_S

pytestmark = pytest.mark.slow

CHANGE_FIELDS = {
    "change",
    "consumers",
    "converged",
    "converge_s",
    "converge_intervals",
    "queues_moved",
    "stayed_converged",
    "after_act_s",
    "after_act_intervals",
}
STEADY_FIELDS = {
    "consumers",
    "queues",
    "window_s",
    "cmds_per_s",
    "cmds_per_s_with_script_inner",
    "cmds_per_s_by_command",
    "model_cmds_per_s",
    "stayed_converged",
}


def test_it_reports_convergence_double_ownership_and_command_rates_as_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The rates of a group this small settle within a couple of seconds.
    monkeypatch.setattr(rebalance, "STEADY_WINDOW_S", 2.0)
    monkeypatch.setenv(rebalance.PROCESSES_ENV, "2")
    out = StringIO()

    call_command(
        "benchmark", "rebalance", "--consumers", "6", "--queues", "16", "--json", stdout=out
    )

    result = json.loads(out.getvalue())
    changes = result["changes"]
    assert [c["change"] for c in changes] == ["start", "remove", "add"]
    assert [c["consumers"] for c in changes] == [6, 5, 6]
    assert all(set(c) >= CHANGE_FIELDS for c in changes)
    assert all(c["converged"] and c["stayed_converged"] for c in changes)
    assert changes[0]["queues_moved"] == 16
    assert all(c["act_s"] > 0 for c in changes)
    assert result["all_converged"] is True
    assert result["double_owned_max"] == 0
    assert result["double_owned_max_by_source"] == {"memory": 0, "redis_locks": 0}
    assert result["double_owned_s"] == 0
    assert result["processes"] == 2
    assert result["timings_scale"] == 10
    # Every configuration's workers recorded ownership and ended by hand-over.
    assert all(cfg["workers_ended_by_reason"].get("shutdown") for cfg in result["configurations"])
    assert result["stale_overlap_max"] == 0
    assert result["timings"]["rebalance_interval_s"] == rebalance.TIMINGS.rebalance_interval_s
    steady = result["steady_state"]
    assert [(s["consumers"], s["queues"]) for s in steady] == [(6, 16), (6, 4), (1, 16)]
    assert all(set(s) >= STEADY_FIELDS for s in steady)
    assert all(s["cmds_per_s"] > 0 and s["stayed_converged"] for s in steady)
    # Every held lock is renewed (lock.lua's HSET): the main run, with the most queues,
    # renews the most. Its queue workers read their streams: one XREAD per consumer per
    # READ_BLOCK_S while idle, however many queues it owns (a read per queue before #26).
    assert result["queue_workers"] == "real (reading their streams)"
    by_command = steady[0]["cmds_per_s_by_command"]
    assert by_command["hset"] > steady[1]["cmds_per_s_by_command"]["hset"]
    assert 0 < by_command["xread"] <= 1.5 * 6 / READ_BLOCK_S
    assert "xrange" not in by_command
    # No consumer card (SET + SADD) and no event log (XADD): the consumers are bare
    # subscription runners.
    assert not {"set", "sadd", "xadd"} & set(steady[0]["cmds_per_s_by_command"])
    assert all(s["fleet_processes_cpu_cores"] > 0 for s in steady)
    assert set(result["scaling"]["fit"]) == {"per_queue", "per_consumer", "per_consumer_queue"}
    assert result["peak_rss_mb"] > 0
    assert set(result["targets_met"]) == set(result["targets"])
