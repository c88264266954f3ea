"""``manage.py benchmark analytics --events N --uri U --json`` writes a synthetic day in
the real layout, times the job against a bare aggregation in one SparkSession and prints
one JSON object; and the job, run again over that day, finds what the generator planted:
the skewed queue and its hot key, every planted stuck episode with its outcome, the one
still open at midnight, the deploys' rebalances."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from pyspark.sql import SparkSession

from bench.analytics_data import SEED, make_plan, planted
from bench.analytics_data.plan import DEPLOY_HOURS
from bench.analytics_data.topology import CONSUMERS
from lockstep.analytics.job import run_job

ROWS = 200_000
FIELDS = {
    "events",
    "day",
    "rows",
    "generate_s",
    "job_s",
    "job_runs_s",
    "bare_aggregation_s",
    "bare_aggregation_runs_s",
    "ratio",
    "peak_driver_rss_mb",
    "peak_jvm_rss_mb",
    "cores",
    "spark_master",
    "repeats",
    "read",
    "result_rows",
    "planted",
    "targets",
    "targets_met",
}


def benchmark(*args: str) -> dict[str, Any]:
    out = StringIO()
    call_command("benchmark", "analytics", *args, "--json", stdout=out)
    return dict(json.loads(out.getvalue()))


def test_it_reports_timings_and_the_job_finds_what_was_planted(
    spark: SparkSession, tmp_path: Any
) -> None:
    uri = str(tmp_path / "bench")

    result = benchmark("--events", str(ROWS), "--uri", uri, "--repeats", "1")

    assert set(result) >= FIELDS
    assert sum(result["rows"].values()) == ROWS
    assert result["rows"]["messages"] > 0.85 * ROWS
    assert result["read"] == result["rows"]
    assert len(result["job_runs_s"]) == len(result["bare_aggregation_runs_s"]) == 1
    assert result["job_s"] > 0 and result["bare_aggregation_s"] > 0
    assert result["ratio"] == pytest.approx(
        result["job_s"] / result["bare_aggregation_s"], rel=0.05
    )
    assert result["spark_master"] == spark.sparkContext.master  # the active session, reused
    assert result["peak_driver_rss_mb"] > 0 and result["peak_jvm_rss_mb"] > 0
    assert result["targets"] == {"job_s": 90.0, "job_s_at_events": 10_000_000, "ratio": 3.0}
    assert result["targets_met"]["job_s"] is None  # the job_s target is for 10,000,000 rows
    assert result["targets_met"]["ratio"] == (result["ratio"] <= 3.0)
    assert result["result_rows"]["queue_day"] == 96
    assert result["result_rows"]["stuck_episodes"] >= 18

    day = date.fromisoformat(result["day"])
    job = run_job(spark, uri, day)
    plan = planted(make_plan(ROWS, day, SEED))

    busiest = max(job.key_skew, key=lambda r: r["over_topic_mean"])
    assert (busiest["topic"], busiest["queue"]) == ("orders", 7)
    assert busiest["over_topic_mean"] > 3.0
    assert busiest["top_key"] == plan["hot_keys"][0]

    found = {
        (e["topic"], e["group"], e["queue"], e["level"], e["offset"]): e for e in job.stuck_episodes
    }
    assert len(plan["episodes"]) == 18
    for p in plan["episodes"]:
        e = found[(p["topic"], p["group"], p["queue"], p["level"], p["offset"])]
        assert (e["key"], e["open"], e["outcome"]) == (p["key"], p["open"], p["outcome"]), p
    assert sum(1 for p in plan["episodes"] if p["open"]) == 1

    rebalances = {(g["topic"], g["group"]): g["rebalances"] for g in job.group_day}
    assert set(rebalances.values()) == {len(DEPLOY_HOURS) * CONSUMERS}
    messages = {(s["topic"], s["queue"]): s["messages"] for s in job.key_skew}
    assert sum(messages.values()) == result["rows"]["messages"]
    for q in job.queue_day:  # every group of a queue saw the messages produced to it
        assert q["produced"] == messages[(q["topic"], q["queue"])]


def test_it_refuses_a_location_that_already_has_data_of_the_day(tmp_path: Any) -> None:
    day = datetime.now(UTC).date() - timedelta(days=1)
    (tmp_path / "bench" / "events" / f"date={day.isoformat()}").mkdir(parents=True)

    with pytest.raises(CommandError, match="already has data"):
        benchmark("--events", "20000", "--uri", str(tmp_path / "bench"))


def test_it_refuses_fewer_rows_than_a_day_needs() -> None:
    with pytest.raises(CommandError, match="at least 20000"):
        benchmark("--events", "1000")
