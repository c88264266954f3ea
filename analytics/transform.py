"""Transforms: pure DataFrame → DataFrame functions over extracted events.

Every function takes events with the columns of ``analytics.schema.EVENT_SCHEMA`` (the
``_corrupt_record`` column that :func:`analytics.extract.read_events` adds is optional,
so tests can build inputs by hand) and returns a new DataFrame; nothing is collected.

Malformed rows never fail a transform: :func:`malformed_events` lists them with a reason,
and the other transforms leave them out.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from analytics.schema import (
    CONSUME_FAILED,
    CORRUPT_COLUMN,
    DEAD_LETTERED,
    DETAILS_SCHEMA,
    LAG_SAMPLED,
    OFFSET_COMMITTED,
    QUEUE_EVENT_TYPES,
)

QUEUE_KEY = ("topic", "group", "queue")


def with_details(events: DataFrame) -> DataFrame:
    """Add ``d``: the ``details`` JSON string parsed against ``DETAILS_SCHEMA``. A field
    that is missing or of the wrong type is null; details that are not a JSON object give
    a struct of nulls (or null when ``details`` itself is null)."""
    return events.withColumn("d", F.from_json("details", DETAILS_SCHEMA))


def _blank(name: str) -> Column:
    return F.coalesce(F.col(name), F.lit("")) == ""


def _problem(events: DataFrame) -> Column:
    """Why a row cannot be used, or null when it can. Needs the ``d`` column."""
    corrupt = (
        F.col(CORRUPT_COLUMN).isNotNull() if CORRUPT_COLUMN in events.columns else F.lit(False)
    )
    kind = F.col("type")
    unplaced = _blank("topic") | _blank("group") | F.col("queue").isNull()
    return (
        F.when(corrupt, "unreadable line")
        .when(F.col("ts_ms").isNull(), "no ts_ms")
        .when(kind.isin(*QUEUE_EVENT_TYPES) & unplaced, "no topic, group or queue")
        .when(
            (kind == LAG_SAMPLED) & F.col("d.lag").isNull(),
            "lag_sampled details without an integer lag",
        )
        .when(
            (kind == OFFSET_COMMITTED) & (F.col("d.offset").isNull() | F.col("d.commits").isNull()),
            "offset_committed details without integer offset and commits",
        )
    )


def _classified(events: DataFrame) -> DataFrame:
    parsed = with_details(events)
    return parsed.withColumn("problem", _problem(parsed))


def malformed_events(events: DataFrame) -> DataFrame:
    """Rows the other transforms skip: ``id, type, problem, raw`` where ``raw`` is the
    details string (or the unreadable line). Events of types no transform reads are only
    reported when the line itself is unreadable or has no timestamp."""
    raw = (
        F.coalesce(F.col(CORRUPT_COLUMN), F.col("details"))
        if CORRUPT_COLUMN in events.columns
        else F.col("details")
    )
    return (
        _classified(events)
        .filter(F.col("problem").isNotNull())
        .select("id", "type", "problem", raw.alias("raw"))
    )


def _usable_queue_events(events: DataFrame) -> DataFrame:
    return _classified(events).filter(
        F.col("problem").isNull() & F.col("type").isin(*QUEUE_EVENT_TYPES)
    )


def _count_of(kind: str) -> Column:
    return F.count(F.when(F.col("type") == kind, 1))


def _of(kind: str, field: str) -> Column:
    return F.when(F.col("type") == kind, F.col(f"d.{field}"))


def _last_committed_offset() -> Column:
    """The committed offset reported by the latest event (a sample's ``committed_offset``
    or a commit's new ``offset``): the latest, not the largest, so a reset shows. Ties in
    time go to the larger offset, which keeps the result deterministic."""
    committed = F.when(F.col("type") == LAG_SAMPLED, F.col("d.committed_offset")).when(
        F.col("type") == OFFSET_COMMITTED, F.col("d.offset")
    )
    latest = F.max(
        F.when(committed.isNotNull(), F.struct(F.col("ts_ms"), committed.alias("offset")))
    )
    return latest.getField("offset")


def lag_summary(events: DataFrame) -> DataFrame:
    """One row per (topic, group, queue) that has any usable queue event.

    Columns: ``topic, group, queue, samples`` (usable ``lag_sampled`` events),
    ``avg_lag, max_lag, p95_lag`` (``percentile_approx``, exact for fewer than 10,000
    samples), ``max_time_lag_s`` — these four are null when ``samples`` is 0 —
    ``last_committed_offset`` (see :func:`_last_committed_offset`; null when no event
    carries one), ``commits`` (sum of ``offset_committed`` ``details.commits``),
    ``retries`` (``consume_failed`` events), ``dead_letters`` (``dead_lettered``
    events), ``window_start_ms, window_end_ms`` (first and last usable event). Sorted by
    topic, group, queue.
    """
    lag = _of(LAG_SAMPLED, "lag")
    return (
        _usable_queue_events(events)
        .groupBy(*QUEUE_KEY)
        .agg(
            _count_of(LAG_SAMPLED).alias("samples"),
            F.avg(lag).alias("avg_lag"),
            F.max(lag).alias("max_lag"),
            F.percentile_approx(lag, 0.95).alias("p95_lag"),
            F.max(_of(LAG_SAMPLED, "time_lag_s")).alias("max_time_lag_s"),
            _last_committed_offset().alias("last_committed_offset"),
            F.coalesce(F.sum(_of(OFFSET_COMMITTED, "commits")), F.lit(0)).alias("commits"),
            _count_of(CONSUME_FAILED).alias("retries"),
            _count_of(DEAD_LETTERED).alias("dead_letters"),
            F.min("ts_ms").alias("window_start_ms"),
            F.max("ts_ms").alias("window_end_ms"),
        )
        .orderBy(*QUEUE_KEY)
    )


def stuck_intervals(events: DataFrame, min_seconds: float = 60.0) -> DataFrame:
    """Stretches of consecutive lag samples of one (topic, group, queue) that were behind
    (``lag > 0``) with an unchanged ``committed_offset``: the queue had work and did not
    move. A sample with lag 0 or a moved offset ends a stretch.

    Columns: ``topic, group, queue, committed_offset, start_ms, end_ms`` (first and last
    sample of the stretch), ``duration_s`` (``end_ms - start_ms``; a single sample lasts
    0 s), ``samples, max_lag``, ``ongoing`` (the stretch includes the queue's last sample,
    so it may still be stuck). Only stretches lasting at least ``min_seconds`` are kept.
    Sorted by topic, group, queue, start_ms. Samples without ``committed_offset`` are
    skipped, since they cannot show whether the queue moved.
    """
    samples = (
        _usable_queue_events(events)
        .filter((F.col("type") == LAG_SAMPLED) & F.col("d.committed_offset").isNotNull())
        .select(
            *QUEUE_KEY,
            "id",
            "ts_ms",
            F.col("d.lag").alias("lag"),
            F.col("d.committed_offset").alias("committed_offset"),
        )
    )
    in_order = Window.partitionBy(*QUEUE_KEY).orderBy("ts_ms", "id")
    behind = F.col("lag") > 0
    previous_behind = F.coalesce(F.lag(behind).over(in_order), F.lit(False))
    # Null on a queue's first sample, which starts a stretch anyway when behind.
    moved = F.lag("committed_offset").over(in_order) != F.col("committed_offset")
    starts_stretch = behind & (~previous_behind | F.coalesce(moved, F.lit(True)))
    numbered = (
        samples.withColumn("starts", starts_stretch.cast("int"))
        .withColumn(
            "stretch",
            F.sum("starts").over(
                in_order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
            ),
        )
        .withColumn("queue_last_ms", F.max("ts_ms").over(Window.partitionBy(*QUEUE_KEY)))
        .filter(behind)
    )
    return (
        numbered.groupBy(*QUEUE_KEY, "stretch")
        .agg(
            F.min("committed_offset").alias("committed_offset"),  # one value per stretch
            F.min("ts_ms").alias("start_ms"),
            F.max("ts_ms").alias("end_ms"),
            F.count(F.lit(1)).alias("samples"),
            F.max("lag").alias("max_lag"),
            F.max("queue_last_ms").alias("queue_last_ms"),
        )
        .withColumn("duration_s", (F.col("end_ms") - F.col("start_ms")) / 1000.0)
        .withColumn("ongoing", F.col("end_ms") == F.col("queue_last_ms"))
        .filter(F.col("duration_s") >= F.lit(float(min_seconds)))
        .select(
            *QUEUE_KEY,
            "committed_offset",
            "start_ms",
            "end_ms",
            "duration_s",
            "samples",
            "max_lag",
            "ongoing",
        )
        .orderBy(*QUEUE_KEY, "start_ms")
    )
