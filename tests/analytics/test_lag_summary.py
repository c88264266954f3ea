from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from analytics.transform import lag_summary, malformed_events
from tests.analytics.builders import commit, event, events_frame, sample


def _by_queue(
    spark: SparkSession, rows: list[tuple[Any, ...]]
) -> dict[tuple[str, str, int], dict[str, Any]]:
    out = lag_summary(events_frame(spark, rows)).collect()
    return {(r["topic"], r["group"], r["queue"]): r.asDict() for r in out}


def test_it_computes_the_lag_figures_of_each_topic_group_and_queue(spark: SparkSession):
    rows = [
        sample(1_000, lag=0, committed=100, time_lag_s=0.0),
        sample(2_000, lag=10, committed=100, time_lag_s=1.5),
        sample(3_000, lag=20, committed=100, time_lag_s=4.5),
        sample(4_000, lag=30, committed=100, time_lag_s=3.0),
        sample(2_500, lag=7, committed=3, queue=1),
        sample(2_500, lag=2, committed=9, group="audit"),
    ]
    summary = _by_queue(spark, rows)

    assert set(summary) == {
        ("orders", "mailer", 0),
        ("orders", "mailer", 1),
        ("orders", "audit", 0),
    }
    q0 = summary[("orders", "mailer", 0)]
    # (0 + 10 + 20 + 30) / 4 = 15; p95: smallest value with >= 95% of samples at or below.
    assert (q0["samples"], q0["avg_lag"], q0["max_lag"], q0["p95_lag"]) == (4, 15.0, 30, 30)
    assert q0["max_time_lag_s"] == 4.5
    assert (q0["window_start_ms"], q0["window_end_ms"]) == (1_000, 4_000)
    assert (
        summary[("orders", "mailer", 1)]["avg_lag"],
        summary[("orders", "audit", 0)]["max_lag"],
    ) == (7.0, 2)


def test_it_computes_p95_lag_as_the_value_95_percent_of_samples_stay_within(spark: SparkSession):
    rows = [sample(1_000 * lag, lag=lag, committed=0) for lag in range(1, 21)]

    q0 = _by_queue(spark, rows)[("orders", "mailer", 0)]

    assert q0["p95_lag"] == 19  # 19 of the 20 samples (95%) are at most 19
    assert q0["avg_lag"] == 10.5


def test_it_sums_commits_and_counts_retries_and_dead_letters(spark: SparkSession):
    rows = [
        sample(1_000, lag=5, committed=100),
        commit(2_000, 100, 105, commits=5),
        event("consume_failed", 2_500, {"offsets": [105], "reconsume_times": 1, "error": "x"}),
        event("consume_failed", 3_000, {"offsets": [105], "reconsume_times": 2, "error": "x"}),
        event("dead_lettered", 3_500, {"offset": 105, "error": "x"}),
        commit(4_000, 105, 110, commits=3),
        event("lock_acquired", 500),
        event("consume_failed", 3_000, {"offsets": [7]}, queue=1),
    ]
    summary = _by_queue(spark, rows)

    q0 = summary[("orders", "mailer", 0)]
    assert (q0["commits"], q0["retries"], q0["dead_letters"]) == (8, 2, 1)
    assert q0["last_committed_offset"] == 110
    # Only queue events count: the lock event at 500 does not open the window.
    assert q0["window_start_ms"] == 1_000
    q1 = summary[("orders", "mailer", 1)]
    assert (q1["samples"], q1["avg_lag"], q1["p95_lag"], q1["commits"], q1["retries"]) == (
        0,
        None,
        None,
        0,
        1,
    )
    assert q1["last_committed_offset"] is None


def test_it_takes_the_last_committed_offset_from_the_latest_event_not_the_largest(
    spark: SparkSession,
):
    rows = [
        commit(1_000, 40, 50, commits=10),
        sample(2_000, lag=12, committed=42),  # the offset was reset after the commit
    ]

    q0 = _by_queue(spark, rows)[("orders", "mailer", 0)]

    assert q0["last_committed_offset"] == 42


def test_it_skips_malformed_details_and_says_why(spark: SparkSession):
    rows = [
        sample(1_000, lag=4, committed=10),
        event("lag_sampled", 2_000, {"lag": "lots", "committed_offset": 10}),
        event("lag_sampled", 3_000, "{not json"),
        event("lag_sampled", 3_500, "[1, 2]"),
        event("offset_committed", 4_000, {"offset": 12}),
        sample(5_000, lag=99, committed=10, queue=None),
        event("lock_acquired", 6_000, "{not json"),  # no transform reads its details
    ]
    frame = events_frame(spark, rows)

    summary = {(r["topic"], r["group"], r["queue"]): r for r in lag_summary(frame).collect()}
    problems = sorted((r["type"], r["problem"]) for r in malformed_events(frame).collect())

    assert list(summary) == [("orders", "mailer", 0)]
    assert (
        summary[("orders", "mailer", 0)]["samples"],
        summary[("orders", "mailer", 0)]["max_lag"],
    ) == (1, 4)
    assert problems == [
        ("lag_sampled", "lag_sampled details without an integer lag"),
        ("lag_sampled", "lag_sampled details without an integer lag"),
        ("lag_sampled", "lag_sampled details without an integer lag"),
        ("lag_sampled", "no topic, group or queue"),
        ("offset_committed", "offset_committed details without integer offset and commits"),
    ]
