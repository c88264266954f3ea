"""Load: collect transform results into plain dicts (times as aware UTC datetimes).

The caller stores them (the Django side writes model rows); nothing here knows where.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

from pyspark.sql import DataFrame

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Enough of an unreadable line or details value to recognise it in a report.
RAW_PREVIEW_CHARS = 200


class LagSummaryRow(TypedDict):
    topic: str
    group: str
    queue: int
    samples: int
    avg_lag: float | None
    max_lag: int | None
    p95_lag: int | None
    max_time_lag_s: float | None
    last_committed_offset: int | None
    commits: int
    retries: int
    dead_letters: int
    window_start: datetime
    window_end: datetime


class StuckIntervalRow(TypedDict):
    topic: str
    group: str
    queue: int
    committed_offset: int
    started_at: datetime
    ended_at: datetime
    duration_s: float
    samples: int
    max_lag: int
    ongoing: bool


class MalformedRow(TypedDict):
    id: str | None
    type: str | None
    problem: str
    raw: str


def from_ms(ms: int) -> datetime:
    """Epoch milliseconds → aware UTC datetime, exactly (no float rounding)."""
    return EPOCH + timedelta(milliseconds=ms)


def _dicts(frame: DataFrame) -> list[dict[str, Any]]:
    return [row.asDict() for row in frame.collect()]


def lag_summary_rows(summary: DataFrame) -> list[LagSummaryRow]:
    """Rows of :func:`analytics.transform.lag_summary`, in its order."""
    return [
        LagSummaryRow(
            topic=r["topic"],
            group=r["group"],
            queue=r["queue"],
            samples=r["samples"],
            avg_lag=r["avg_lag"],
            max_lag=r["max_lag"],
            p95_lag=r["p95_lag"],
            max_time_lag_s=r["max_time_lag_s"],
            last_committed_offset=r["last_committed_offset"],
            commits=r["commits"],
            retries=r["retries"],
            dead_letters=r["dead_letters"],
            window_start=from_ms(r["window_start_ms"]),
            window_end=from_ms(r["window_end_ms"]),
        )
        for r in _dicts(summary)
    ]


def stuck_interval_rows(stuck: DataFrame) -> list[StuckIntervalRow]:
    """Rows of :func:`analytics.transform.stuck_intervals`, in its order."""
    return [
        StuckIntervalRow(
            topic=r["topic"],
            group=r["group"],
            queue=r["queue"],
            committed_offset=r["committed_offset"],
            started_at=from_ms(r["start_ms"]),
            ended_at=from_ms(r["end_ms"]),
            duration_s=r["duration_s"],
            samples=r["samples"],
            max_lag=r["max_lag"],
            ongoing=r["ongoing"],
        )
        for r in _dicts(stuck)
    ]


def malformed_rows(malformed: DataFrame, limit: int) -> tuple[int, list[MalformedRow]]:
    """How many rows :func:`analytics.transform.malformed_events` found, and the first
    ``limit`` of them by id, with ``raw`` cut to a preview."""
    total = malformed.count()
    examples = (
        [
            MalformedRow(
                id=r["id"],
                type=r["type"],
                problem=r["problem"],
                raw=(r["raw"] or "")[:RAW_PREVIEW_CHARS],
            )
            for r in _dicts(malformed.orderBy("id").limit(limit))
        ]
        if total
        else []
    )
    return total, examples
