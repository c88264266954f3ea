from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import SparkSession

from analytics.extract import read_events
from analytics.schema import CORRUPT_COLUMN, EVENT_SCHEMA
from analytics.transform import lag_summary, malformed_events


def _line(**fields: object) -> str:
    return json.dumps(fields) + "\n"


def test_it_reads_an_export_with_the_explicit_schema(spark: SparkSession, tmp_path: Path):
    path = tmp_path / "events.jsonl"
    path.write_text(
        _line(
            id="1-0",
            type="lag_sampled",
            ts_ms=1_000,
            topic="orders",
            group="mailer",
            queue=3,
            key="",
            token=None,
            consumer="",
            details='{"lag":7,"committed_offset":2}',
        )
        + _line(
            id="2-0",
            type="lock_acquired",
            ts_ms=2_000,
            topic="orders",
            group="mailer",
            queue=3,
            key="",
            token=12,
            consumer="w1",
            details="{}",
        )
    )

    events = read_events(spark, path)
    try:
        rows = events.orderBy("id").collect()
        summary = lag_summary(events).collect()
    finally:
        events.unpersist()

    assert events.schema.fieldNames() == [*EVENT_SCHEMA.fieldNames(), CORRUPT_COLUMN]
    assert [(r["id"], r["ts_ms"], r["queue"], r["token"], r[CORRUPT_COLUMN]) for r in rows] == [
        ("1-0", 1_000, 3, None, None),
        ("2-0", 2_000, 3, 12, None),
    ]
    assert [(r["queue"], r["max_lag"], r["last_committed_offset"]) for r in summary] == [(3, 7, 2)]


def test_it_reports_unreadable_lines_as_malformed_instead_of_failing(
    spark: SparkSession, tmp_path: Path
):
    path = tmp_path / "events.jsonl"
    path.write_text(
        _line(
            id="1-0",
            type="lag_sampled",
            ts_ms=1_000,
            topic="orders",
            group="mailer",
            queue=0,
            details='{"lag":1,"committed_offset":0}',
        )
        + "this is not json\n"
        + _line(
            id="3-0",
            type="lag_sampled",
            ts_ms=3_000,
            topic="orders",
            group="mailer",
            queue="three",
            details='{"lag":1}',
        )
    )

    events = read_events(spark, path)
    try:
        problems = sorted(r["problem"] for r in malformed_events(events).collect())
        samples = [r["samples"] for r in lag_summary(events).collect()]
    finally:
        events.unpersist()

    assert problems == ["unreadable line", "unreadable line"]
    assert samples == [1]
