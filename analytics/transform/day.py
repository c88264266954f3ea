"""The whole day per queue and per group: the figures the reports page compares with
earlier days."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lockstep.analytics.transform.churn import QUEUE_EVENT_COLUMNS
from lockstep.analytics.transform.common import GROUP, QUEUE, zero_if_null
from lockstep.analytics.transform.lag import LAG_COLUMNS, lag_figures
from lockstep.analytics.transform.stuck import episode_counts

_COUNTS = ("produced", "consumed", *QUEUE_EVENT_COLUMNS, "stuck_episodes")


def _dead_letter_rate() -> Column:
    """Dead letters per consumed message; null when nothing was consumed."""
    return F.when(F.col("consumed") > 0, F.col("dead_letters") / F.col("consumed"))


def queue_day(
    samples: DataFrame, hourly_queues: DataFrame, events_per_queue: DataFrame, episodes: DataFrame
) -> DataFrame:
    """One row per (topic, group, queue) seen in the samples or the events: the day's lag
    figures, ``produced`` and ``consumed`` (sums of the hours), ``QUEUE_EVENT_COLUMNS``,
    ``stuck_episodes`` and ``dead_letter_rate``."""
    throughput = hourly_queues.groupBy(*QUEUE).agg(
        F.sum("produced").alias("produced"), F.sum("consumed").alias("consumed")
    )
    rows = (
        lag_figures(samples, QUEUE)
        .join(throughput, list(QUEUE), "full_outer")
        .join(events_per_queue, list(QUEUE), "full_outer")
        .join(episode_counts(episodes), list(QUEUE), "left")
    )
    rows = zero_if_null(rows, "samples", "seconds_above_threshold", *_COUNTS)
    return rows.withColumn("dead_letter_rate", _dead_letter_rate()).select(
        *QUEUE, *LAG_COLUMNS, *_COUNTS, "dead_letter_rate"
    )


def group_day(samples: DataFrame, queue_days: DataFrame, rebalances: DataFrame) -> DataFrame:
    """One row per (topic, group): lag percentiles over all the group's samples of the
    day, ``seconds_above_threshold`` of its worst queue, the queues' counts summed,
    ``rebalances`` and ``dead_letter_rate``."""
    figures = lag_figures(samples, GROUP).drop("seconds_above_threshold")
    sums = queue_days.groupBy(*GROUP).agg(
        F.max("seconds_above_threshold").alias("seconds_above_threshold"),
        *[F.sum(c).alias(c) for c in _COUNTS],
    )
    rows = figures.join(sums, list(GROUP), "full_outer").join(rebalances, list(GROUP), "full_outer")
    rows = zero_if_null(rows, "samples", "seconds_above_threshold", *_COUNTS, "rebalances")
    return rows.withColumn("dead_letter_rate", _dead_letter_rate()).select(
        *GROUP, *LAG_COLUMNS, *_COUNTS, "rebalances", "dead_letter_rate"
    )
