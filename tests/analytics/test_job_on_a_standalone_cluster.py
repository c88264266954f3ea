"""The job on a real Spark standalone cluster (a master and a worker in JVMs of their own,
whose executor reads the data itself through a ``file:///`` URI) gives the same results
as on the suite's local session: nothing in it depends on running inside the driver's
JVM or on one partitioning of the data.

The cluster run is a ``python -m lockstep.analytics`` process (the CLI that spark-submit runs),
since a Python process holds one SparkContext and the suite's is local; the local run
happens meanwhile in the suite's session, and its result goes through the same JSON."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from bench.analytics_data import generate
from lockstep.analytics.job import run_job
from tests.analytics.standalone import standalone_cluster

ROOT = Path(__file__).resolve().parents[2]
DAY = date(2026, 11, 23)
ROWS = 20_000
# Five JVMs (a master, a worker, its executor, the job's driver, the suite's session) on
# two cores beside the other workers' tests: minutes, not the suite's default timeout.
RUN_TIMEOUT_S = 480
pytestmark = pytest.mark.timeout(600)
CLI = (sys.executable, "-m", "lockstep.analytics", "--shuffle-partitions", "2")


def start_job(uri: str, master: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "--uri", uri, "--date", DAY.isoformat(), "--master", master],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str]) -> dict[str, Any]:
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-4000:]
    return dict(json.loads(out))


def as_printed(result: Any) -> dict[str, Any]:
    """A ``JobResult`` as ``python -m lockstep.analytics`` prints it (times in ISO 8601)."""
    text = json.dumps(dataclasses.asdict(result), default=lambda v: v.isoformat())
    return dict(json.loads(text))


def canonical(value: Any) -> Any:
    """Floats to 10 significant digits (sums in another order differ in the last bits),
    lists of rows in a fixed order (ties may come out in either order)."""
    if isinstance(value, float):
        return float(f"{value:.10g}") if math.isfinite(value) else value
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [canonical(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    return value


def test_it_gives_the_same_results_on_a_standalone_cluster_as_locally(
    spark: SparkSession, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    generate(str(data), ROWS, DAY)

    with standalone_cluster(tmp_path / "cluster") as cluster:
        job = start_job(data.as_uri(), cluster.url, cluster.env)
        try:
            local = as_printed(run_job(spark, data.as_uri(), DAY))
        finally:
            on_cluster = finish(job)
        apps = cluster.status()["completedapps"]

    assert [app["name"] for app in apps] == ["lockstep-analytics"]  # it did run there
    assert local["messages_read"] + local["events_read"] + local["samples_read"] == ROWS
    assert all(local[name] for name in ("hourly_queue", "queue_day", "stuck_episodes"))
    assert canonical(on_cluster) == canonical(local)
