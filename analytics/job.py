"""The nightly job: extract → transform → load for one UTC day, in one call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lockstep.analytics import load, transform
from lockstep.analytics.extract import DayData, read_day

# The live view's default (LOCKSTEP_STUCK_AFTER_SECONDS) and the lag alert's
# (LOCKSTEP_ALERT_LAG_SECONDS); the Django side passes its settings.
DEFAULT_STUCK_SECONDS = 60.0
DEFAULT_LAG_THRESHOLD_S = 300.0
DEFAULT_MAX_SAMPLE_GAP_S = 60.0
DEFAULT_TOP_N = 20

# (stage, percent done) → None: told before each stage, so a page can show progress.
Progress = Callable[[str, int], None]


@dataclass(frozen=True)
class JobOptions:
    stuck_seconds: float = DEFAULT_STUCK_SECONDS
    lag_threshold_s: float = DEFAULT_LAG_THRESHOLD_S
    max_sample_gap_s: float = DEFAULT_MAX_SAMPLE_GAP_S
    top_n: int = DEFAULT_TOP_N


@dataclass(frozen=True)
class JobResult:
    day: date
    messages_read: int
    events_read: int
    samples_read: int
    hourly_queue: list[load.Row] = field(default_factory=list)
    hourly_group: list[load.Row] = field(default_factory=list)
    queue_day: list[load.Row] = field(default_factory=list)
    group_day: list[load.Row] = field(default_factory=list)
    stuck_episodes: list[load.Row] = field(default_factory=list)
    retry_hotspots: list[load.Row] = field(default_factory=list)
    key_skew: list[load.Row] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.messages_read or self.events_read or self.samples_read)


def _silent(stage: str, percent: int) -> None:
    return None


def run_job(
    spark: SparkSession,
    uri: str,
    day: date,
    options: JobOptions | None = None,
    progress: Progress = _silent,
) -> JobResult:
    """Analyse ``day`` (UTC) of the data set at ``uri`` (docs/analytics.md §3).

    A day without data gives a result with no rows (``empty``). Rows that break the
    layout's contract (no topic, no time) are left out by the transforms. Raises only on
    Spark or I/O failure. Every collect is bounded (queues by hours, episodes, top lists).
    """
    opts = options or JobOptions()
    progress("extract", 5)
    data = read_day(spark, uri, day)
    try:
        return _analyse(data, day, opts, progress)
    finally:
        data.unpersist()


def _analyse(data: DayData, day: date, opts: JobOptions, progress: Progress) -> JobResult:
    progress("lag", 15)
    samples = transform.with_seconds_above(
        data.samples, opts.lag_threshold_s, opts.max_sample_gap_s
    ).cache()
    produced = transform.produced_per_hour(data.messages).cache()
    hourly_queue = transform.hourly_queue(samples, produced).cache()
    hourly_group = transform.hourly_group(samples, hourly_queue)
    episodes = transform.stuck_episodes(
        samples, data.events, opts.stuck_seconds, data.event_details
    ).cache()
    queue_day = transform.queue_day(
        samples, hourly_queue, transform.queue_events(data.events), episodes
    ).cache()
    group_day = transform.group_day(samples, queue_day, transform.rebalances(data.events))
    order = transform.ORDER
    try:
        result = {"hourly_queue": load.rows(hourly_queue, order["hourly_queue"])}
        result["hourly_group"] = load.rows(hourly_group, order["hourly_group"])
        progress("stuck", 40)
        result["stuck_episodes"] = load.episode_rows(episodes, order["stuck_episodes"])
        progress("retries", 50)
        hotspots = transform.retry_hotspots(data.events, opts.top_n)
        result["retry_hotspots"] = load.rows(hotspots, order["retry_hotspots"])
        progress("skew", 60)
        result["key_skew"] = load.rows(transform.key_skew(data.messages), order["key_skew"])
        progress("churn", 75)
        result["queue_day"] = load.rows(queue_day, order["queue_day"])
        result["group_day"] = load.rows(group_day, order["group_day"])
        progress("count", 90)
        return JobResult(
            day=day,
            messages_read=_total(produced, "produced"),
            events_read=data.events.count(),
            samples_read=samples.count(),
            **result,
        )
    finally:
        for frame in (samples, produced, hourly_queue, episodes, queue_day):
            frame.unpersist()


def _total(frame: DataFrame, column: str) -> int:
    row = frame.agg(F.sum(column)).first()
    return int(row[0] or 0) if row is not None else 0
