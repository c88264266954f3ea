"""``manage.py benchmark manyqueues --queues 16 --json`` runs one real consumer process
per ordering that owns every queue of a topic, and prints what it costs: its threads and
Redis connections, the commands it sends while idle, how fast a message to an idle queue
reaches its handler, and its throughput against a process owning 8 queues."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
FIGURES = {
    "owned_after_s",
    "threads",
    "redis_connections",
    "redis_connections_busy",
    "idle_commands_per_s",
    "wakeup_p50_ms",
    "wakeup_p99_ms",
    "busy_msgs_per_s",
    "busy_msgs_per_s_8_queues",
    "busy_msgs_per_s_rounds",
    "busy_msgs_per_s_8_queues_rounds",
    "busy_ratio_to_8_queues",
    "rss_mb",
    "threads_busy",
}


def test_it_prints_each_orderings_figures_for_one_process_owning_every_queue() -> None:
    command = [sys.executable, "manage.py", "benchmark", "manyqueues", "--json"]
    command += ["--queues", "16", "--messages", "2000", "--idle-seconds", "1", "--repeats", "2"]

    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)

    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert (result["queues"], result["lanes"], result["busy_rounds"]) == (16, 16, 2)
    for ordering in ("queue", "key"):
        figures = result[ordering]
        assert set(figures) == FIGURES, ordering
        assert figures["threads"] >= 2 and figures["redis_connections"] >= 1
        assert figures["redis_connections_busy"] >= 1
        assert figures["idle_commands_per_s"] > 0
        assert 0 < figures["wakeup_p50_ms"] <= figures["wakeup_p99_ms"]
        for phases in ("busy_msgs_per_s", "busy_msgs_per_s_8_queues"):
            rounds = figures[f"{phases}_rounds"]
            assert len(rounds) == 2 and min(rounds) > 0, (ordering, phases)
            assert figures[phases] == statistics.median(rounds)
        ratio = figures["busy_msgs_per_s"] / figures["busy_msgs_per_s_8_queues"]
        assert figures["busy_ratio_to_8_queues"] == round(ratio, 3)


def test_it_refuses_a_queue_count_below_one() -> None:
    command = [sys.executable, "manage.py", "benchmark", "manyqueues", "--queues", "0"]

    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert done.returncode != 0
    assert "--queues must be at least 1" in done.stderr
    assert "Traceback" not in done.stderr
