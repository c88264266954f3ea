"""Lock churn and failures per queue and group, from the events."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lockstep.analytics.transform.common import (
    CONSUME_FAILED,
    DEAD_LETTERED,
    FENCING_REJECTED,
    GROUP,
    LOCK_ACQUIRED,
    LOCK_LOST,
    LOCK_MARGIN_OVERRUN,
    LOCK_RENEW_FAILED,
    MALFORMED_ENTRY,
    QUEUE,
    REBALANCE,
    count_of,
    sum_n_of,
)

QUEUE_EVENT_COLUMNS = (
    "retries",
    "dead_letters",
    "owner_changes",
    "lock_losses",
    "fencing_rejections",
    "margin_overruns",
)


def queue_events(events: DataFrame) -> DataFrame:
    """``topic, group, queue`` and ``QUEUE_EVENT_COLUMNS``: retried offsets, dead letters
    (malformed entries included), owner changes (grants), lock losses (lost or expired
    before renewal), fencing rejections and lock-margin overruns."""
    return (
        events.filter(F.col("queue").isNotNull())
        .groupBy(*QUEUE)
        .agg(
            F.coalesce(sum_n_of(CONSUME_FAILED), F.lit(0)).alias("retries"),
            count_of(DEAD_LETTERED, MALFORMED_ENTRY).alias("dead_letters"),
            count_of(LOCK_ACQUIRED).alias("owner_changes"),
            count_of(LOCK_LOST, LOCK_RENEW_FAILED).alias("lock_losses"),
            count_of(FENCING_REJECTED).alias("fencing_rejections"),
            count_of(LOCK_MARGIN_OVERRUN).alias("margin_overruns"),
        )
    )


def rebalances(events: DataFrame) -> DataFrame:
    """``topic, group, rebalances``: assignment changes the group's consumers made."""
    return (
        events.filter(F.col("type") == REBALANCE)
        .groupBy(*GROUP)
        .agg(F.count(F.lit(1)).alias("rebalances"))
    )
