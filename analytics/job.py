"""The nightly job: extract → transform → load, in one call."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession

from analytics import load, transform
from analytics.extract import read_events

# A queue behind with an unchanged offset for a minute is stuck: lag sampling runs every
# 10 s by default, so that is six samples in a row, not one slow handler call.
DEFAULT_STUCK_SECONDS = 60.0
# The report shows a few examples of malformed events; the count says how many there were.
MALFORMED_EXAMPLES = 5


@dataclass(frozen=True)
class JobResult:
    events: int
    malformed: int
    malformed_examples: list[load.MalformedRow] = field(default_factory=list)
    lag_summary: list[load.LagSummaryRow] = field(default_factory=list)
    stuck_intervals: list[load.StuckIntervalRow] = field(default_factory=list)


def run_job(
    spark: SparkSession,
    path: str | Path,
    *,
    stuck_seconds: float = DEFAULT_STUCK_SECONDS,
    malformed_examples: int = MALFORMED_EXAMPLES,
) -> JobResult:
    """Analyse one export file. Malformed events are counted and skipped, never fatal;
    an empty file gives a result with no rows. Raises only on Spark or I/O failure."""
    events = read_events(spark, path)
    try:
        total = events.count()
        malformed, examples = load.malformed_rows(
            transform.malformed_events(events), malformed_examples
        )
        return JobResult(
            events=total,
            malformed=malformed,
            malformed_examples=examples,
            lag_summary=load.lag_summary_rows(transform.lag_summary(events)),
            stuck_intervals=load.stuck_interval_rows(
                transform.stuck_intervals(events, stuck_seconds)
            ),
        )
    finally:
        events.unpersist()
