"""Retries: the keys and error types with the most retried offsets per (topic, group)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from lockstep.analytics.transform.common import (
    CONSUME_FAILED,
    DEAD_LETTERED,
    GROUP,
    count_of,
    sum_n_of,
)

# Rank order within a (topic, group, kind); a leading "-" sorts descending.
ORDER = ("topic", "group", "kind", "-retries", "-dead_letters", "name")
# Hotspot kind -> the event column it ranks.
_KINDS = {"key": "key", "error": "error_type"}


def _ranked(events: DataFrame, kind: str, column: str, top_n: int) -> DataFrame:
    named = events.filter(
        F.col("type").isin(CONSUME_FAILED, DEAD_LETTERED)
        & (F.coalesce(F.col(column), F.lit("")) != "")
    )
    totals = named.groupBy(*GROUP, F.col(column).alias("name")).agg(
        F.coalesce(sum_n_of(CONSUME_FAILED), F.lit(0)).alias("retries"),
        count_of(DEAD_LETTERED).alias("dead_letters"),
    )
    order = Window.partitionBy(*GROUP).orderBy(
        F.col("retries").desc(), F.col("dead_letters").desc(), F.col("name")
    )
    return (
        totals.withColumn("rank", F.row_number().over(order))
        .filter(F.col("rank") <= top_n)
        .select(*GROUP, F.lit(kind).alias("kind"), "name", "retries", "dead_letters")
    )


def retry_hotspots(events: DataFrame, top_n: int) -> DataFrame:
    """``topic, group, kind (key | error), name, retries, dead_letters``: per (topic,
    group) and kind, the ``top_n`` names with the most retried offsets (``consume_failed``
    ``n``), then the most dead letters, then by name (``ORDER`` sorts them so)."""
    frames = [_ranked(events, kind, column, top_n) for kind, column in _KINDS.items()]
    return frames[0].unionByName(frames[1])
