"""What every transform shares: event type names, grouping keys, percentile figures."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

# Event type names, as the runtime writes them (workers/events.py; docs/events.md §2).
CONSUME_FAILED = "consume_failed"
DEAD_LETTERED = "dead_lettered"
MALFORMED_ENTRY = "malformed_entry"
DEAD_LETTER_REPLAYED = "dead_letter_replayed"
DEAD_LETTER_DISCARDED = "dead_letter_discarded"
LOCK_ACQUIRED = "lock_acquired"
LOCK_LOST = "lock_lost"
LOCK_RENEW_FAILED = "lock_renew_failed"
FENCING_REJECTED = "fencing_rejected"
LOCK_MARGIN_OVERRUN = "lock_margin_overrun"
REBALANCE = "rebalance"

QUEUE = ("topic", "group", "queue")
GROUP = ("topic", "group")
PERCENTILES = (0.5, 0.95, 0.99)
# percentile_approx is exact (nearest rank) while a group holds fewer values than this;
# a day of 10 s samples of one group's 1,024 queues is under 9 million.
PERCENTILE_ACCURACY = 10_000_000
MS = 1000.0


def nearest_rank(column: str, alias: str) -> list[Column]:
    """``<alias>_p50, _p95, _p99, _max`` of ``column``: the smallest value with at least
    p of the values at or below it (exact below ``PERCENTILE_ACCURACY`` values)."""
    values = F.percentile_approx(column, list(PERCENTILES), PERCENTILE_ACCURACY)
    return [F.max(column).alias(f"{alias}_max"), values.alias(f"_{alias}_ps")]


def spread_percentiles(frame: DataFrame, *aliases: str) -> DataFrame:
    """Turn the arrays that ``nearest_rank`` made into ``_p50``, ``_p95``, ``_p99``."""
    for alias in aliases:
        packed = f"_{alias}_ps"
        for i, p in enumerate(PERCENTILES):
            frame = frame.withColumn(f"{alias}_p{round(p * 100)}", F.col(packed)[i])
        frame = frame.drop(packed)
    return frame


def count_of(*types: str) -> Column:
    return F.count(F.when(F.col("type").isin(*types), 1))


def sum_n_of(*types: str) -> Column:
    """The sum of ``n`` (offsets retried, commits, …) over events of ``types``; a row
    without ``n`` counts one."""
    return F.sum(F.when(F.col("type").isin(*types), F.coalesce(F.col("n"), F.lit(1))))


def zero_if_null(frame: DataFrame, *columns: str) -> DataFrame:
    return frame.fillna(0, subset=list(columns))
