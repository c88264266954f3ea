"""Lag and throughput per hour and per day (docs/analytics.md §3).

Offset lag and time lag come from the samples; produced from the messages (by produce
time); consumed from the growth of the committed offset between the last samples of
consecutive hours (the first hour of the day counts from the day's first sample; a
committed offset that went back, a reset, counts as nothing consumed, never negative).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from lockstep.analytics.transform.common import (
    GROUP,
    MS,
    QUEUE,
    nearest_rank,
    spread_percentiles,
    zero_if_null,
)

LAG_COLUMNS = (
    "samples",
    "lag_p50",
    "lag_p95",
    "lag_p99",
    "lag_max",
    "time_lag_p50",
    "time_lag_p95",
    "time_lag_p99",
    "time_lag_max",
    "seconds_above_threshold",
)


def with_seconds_above(samples: DataFrame, threshold_s: float, max_gap_s: float) -> DataFrame:
    """Add ``above_s``: for a sample whose time lag is above ``threshold_s``, the seconds
    until the queue's next sample (at most ``max_gap_s``; 0 for the day's last sample);
    else 0."""
    in_order = Window.partitionBy(*QUEUE).orderBy("ts_ms")
    gap_ms = F.lead("ts_ms").over(in_order) - F.col("ts_ms")
    until_next = F.least(F.coalesce(gap_ms, F.lit(0)) / MS, F.lit(float(max_gap_s)))
    above = F.col("time_lag_s") > F.lit(float(threshold_s))
    return samples.withColumn("above_s", F.when(above, until_next).otherwise(F.lit(0.0)))


def _lag_aggregates() -> list[Column]:
    return [
        F.count(F.lit(1)).alias("samples"),
        *nearest_rank("lag", "lag"),
        *nearest_rank("time_lag_s", "time_lag"),
    ]


def lag_figures(samples: DataFrame, keys: tuple[str, ...]) -> DataFrame:
    """Per ``keys``: ``samples``, the ``lag_*`` and ``time_lag_*`` percentiles and max,
    and ``seconds_above_threshold`` (the sum of ``above_s``, see ``with_seconds_above``)."""
    figures = samples.groupBy(*keys).agg(
        *_lag_aggregates(), F.sum("above_s").alias("seconds_above_threshold")
    )
    return spread_percentiles(figures, "lag", "time_lag")


def produced_per_hour(messages: DataFrame) -> DataFrame:
    """``topic, queue, hour, produced``: messages by the hour they were produced."""
    return messages.groupBy("topic", "queue", "hour").agg(F.count(F.lit(1)).alias("produced"))


def consumed_per_hour(samples: DataFrame) -> DataFrame:
    """``topic, group, queue, hour, consumed`` (see the module docstring)."""
    hourly = samples.groupBy(*QUEUE, "hour").agg(
        F.min_by("committed_offset", "ts_ms").alias("first_committed"),
        F.max_by("committed_offset", "ts_ms").alias("last_committed"),
    )
    by_hour = Window.partitionBy(*QUEUE).orderBy("hour")
    before = F.coalesce(F.lag("last_committed").over(by_hour), F.col("first_committed"))
    consumed = F.greatest(F.col("last_committed") - before, F.lit(0))
    return hourly.select(*QUEUE, "hour", consumed.alias("consumed"))


def _groups_of_topics(samples: DataFrame) -> DataFrame:
    return samples.select("topic", "group").distinct()


def hourly_queue(samples: DataFrame, produced: DataFrame) -> DataFrame:
    """One row per (topic, group, queue, hour) with samples or produced messages (for the
    groups the samples know of): the lag figures, ``produced`` and ``consumed``.

    ``samples`` must carry ``above_s`` (``with_seconds_above``); ``produced`` is
    ``produced_per_hour``."""
    figures = lag_figures(samples, (*QUEUE, "hour"))
    per_group = produced.join(_groups_of_topics(samples), "topic")
    rows = (
        figures.join(per_group, [*QUEUE, "hour"], "full_outer")
        .join(consumed_per_hour(samples), [*QUEUE, "hour"], "left")
        .select(*QUEUE, "hour", *LAG_COLUMNS, "produced", "consumed")
    )
    return zero_if_null(rows, "samples", "seconds_above_threshold", "produced", "consumed")


def hourly_group(samples: DataFrame, hourly_queues: DataFrame) -> DataFrame:
    """One row per (topic, group, hour): lag percentiles over all the group's samples of
    that hour; ``seconds_above_threshold`` is the worst queue's; ``produced`` and
    ``consumed`` are the queues' sums."""
    figures = spread_percentiles(
        samples.groupBy(*GROUP, "hour").agg(*_lag_aggregates()), "lag", "time_lag"
    )
    sums = hourly_queues.groupBy(*GROUP, "hour").agg(
        F.max("seconds_above_threshold").alias("seconds_above_threshold"),
        F.sum("produced").alias("produced"),
        F.sum("consumed").alias("consumed"),
    )
    rows = figures.join(sums, [*GROUP, "hour"], "full_outer").select(
        *GROUP, "hour", *LAG_COLUMNS, "produced", "consumed"
    )
    return zero_if_null(rows, "samples", "seconds_above_threshold", "produced", "consumed")
