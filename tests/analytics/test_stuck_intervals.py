from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from analytics.transform import stuck_intervals
from tests.analytics.builders import events_frame, sample

# One queue, sampled every 30 s: behind at offset 10 for a minute, then moving, caught up,
# then behind again at offset 18 until the last sample.
SAMPLES = [
    sample(0, lag=5, committed=10),
    sample(30_000, lag=6, committed=10),
    sample(60_000, lag=8, committed=10),
    sample(90_000, lag=2, committed=16),
    sample(120_000, lag=0, committed=18),
    sample(150_000, lag=3, committed=18),
    sample(160_000, lag=4, committed=18),
]


def _stretches(
    spark: SparkSession, rows: list[tuple[Any, ...]], min_seconds: float
) -> list[tuple[Any, ...]]:
    out = stuck_intervals(events_frame(spark, rows), min_seconds).collect()
    return [
        (
            r["queue"],
            r["committed_offset"],
            r["start_ms"],
            r["end_ms"],
            r["duration_s"],
            r["samples"],
            r["max_lag"],
            r["ongoing"],
        )
        for r in out
    ]


def test_it_finds_a_stretch_behind_with_an_unchanged_committed_offset(spark: SparkSession):
    assert _stretches(spark, SAMPLES, min_seconds=60) == [
        (0, 10, 0, 60_000, 60.0, 3, 8, False),
    ]


def test_it_keeps_short_stretches_under_a_lower_threshold_and_marks_the_ongoing_one(
    spark: SparkSession,
):
    assert _stretches(spark, SAMPLES, min_seconds=0) == [
        (0, 10, 0, 60_000, 60.0, 3, 8, False),
        (0, 16, 90_000, 90_000, 0.0, 1, 2, False),
        (0, 18, 150_000, 160_000, 10.0, 2, 4, True),
    ]


def test_it_keeps_queues_apart(spark: SparkSession):
    rows = [
        sample(0, lag=5, committed=10, queue=0),
        sample(0, lag=5, committed=20, queue=1),
        sample(60_000, lag=5, committed=10, queue=0),
        sample(60_000, lag=5, committed=21, queue=1),
    ]

    assert _stretches(spark, rows, min_seconds=30) == [(0, 10, 0, 60_000, 60.0, 2, 5, True)]
