"""Stuck episodes (docs/analytics.md §4): every interval in which a queue or a key was
blocked longer than the stuck threshold, with what blocked it and how it ended."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from lockstep.analytics.transform.common import (
    CONSUME_FAILED,
    DEAD_LETTER_DISCARDED,
    DEAD_LETTER_REPLAYED,
    DEAD_LETTERED,
    MS,
    QUEUE,
)

EPISODE_COLUMNS = (
    "topic",
    "group",
    "queue",
    "level",
    "key",
    "offset",
    "start_ms",
    "end_ms",
    "last_seen_ms",
    "open",
    "duration_s",
    "retries",
    "max_behind",
    "outcome",
    "error",
)
ERROR_CHARS = 500
# What names one episode: its place, level, blocking key and offset, and when it started
# (a natural key rather than a generated id, which could differ if a frame were recomputed).
EPISODE_ID = (*QUEUE, "level", "key", "offset", "start_ms")

# Event type -> the outcome it gives an episode at its offset.
_OUTCOMES = {
    DEAD_LETTERED: "dead_lettered",
    DEAD_LETTER_REPLAYED: "replayed",
    DEAD_LETTER_DISCARDED: "discarded",
}


def _sample_times(samples: DataFrame) -> DataFrame:
    """``topic, group, queue, ts_ms, next_ms``: each sample time of a queue and the one
    after it (null for the day's last), plus ``last_ms``, the queue's last sample time."""
    in_order = Window.partitionBy(*QUEUE).orderBy("ts_ms")
    whole = Window.partitionBy(*QUEUE)
    return (
        samples.select(*QUEUE, "ts_ms")
        .distinct()
        .withColumn("next_ms", F.lead("ts_ms").over(in_order))
        .withColumn("last_ms", F.max("ts_ms").over(whole))
    )


def _queue_stretches(samples: DataFrame) -> DataFrame:
    """Runs of consecutive samples of a queue that were behind (``lag > 0``) with an
    unchanged committed offset and no blocked key to explain it (key-ordered queues with
    blocked keys are reported per key instead)."""
    in_order = Window.partitionBy(*QUEUE).orderBy("ts_ms")
    stuck = (F.col("lag") > 0) & (F.coalesce(F.col("blocked_count"), F.lit(0)) == 0)
    previous_stuck = F.coalesce(F.lag(stuck).over(in_order), F.lit(False))
    moved = F.coalesce(
        F.lag("committed_offset").over(in_order) != F.col("committed_offset"), F.lit(True)
    )
    starts = stuck & (~previous_stuck | moved)
    numbered = (
        samples.filter(F.col("committed_offset").isNotNull())
        .withColumn("is_stuck", stuck)
        .withColumn("starts", starts.cast("int"))
        .withColumn("stretch", F.sum("starts").over(in_order))
        .filter(F.col("is_stuck"))
    )
    return numbered.groupBy(*QUEUE, "stretch").agg(
        F.lit("queue").alias("level"),
        F.max(F.when(F.col("head_key") != "", F.col("head_key"))).alias("key"),
        F.first("committed_offset").alias("offset"),
        F.min("ts_ms").alias("start_ms"),
        F.max("ts_ms").alias("last_seen_ms"),
        F.coalesce(F.max("retries"), F.lit(0)).cast("long").alias("retries"),
        F.max("lag").alias("max_behind"),
        F.lit(None).cast("string").alias("sample_error"),
    )


def _key_blocks(samples: DataFrame) -> DataFrame:
    """Each (key, offset) listed in a queue's samples' ``blocked_keys``."""
    listed = samples.select(*QUEUE, "ts_ms", F.explode("blocked_keys").alias("b")).select(
        *QUEUE, "ts_ms", "b.*"
    )
    return listed.groupBy(*QUEUE, "key", "offset").agg(
        F.lit("key").alias("level"),
        F.coalesce(F.min("since_ms"), F.min("ts_ms")).alias("start_ms"),
        F.max("ts_ms").alias("last_seen_ms"),
        F.coalesce(F.max("retries"), F.lit(0)).cast("long").alias("retries"),
        F.coalesce(F.max("waiting"), F.lit(0)).cast("long").alias("max_behind"),
        F.max_by("error", "ts_ms").alias("sample_error"),
    )


def _outcomes(events: DataFrame) -> DataFrame:
    """``topic, group, queue, offset, ts_ms, outcome`` of the events that decide an
    episode's outcome."""
    outcome = F.lit(None).cast("string")
    for kind, name in _OUTCOMES.items():
        outcome = F.when(F.col("type") == kind, F.lit(name)).otherwise(outcome)
    return events.filter(F.col("type").isin(*_OUTCOMES) & F.col("offset").isNotNull()).select(
        *QUEUE, "offset", "ts_ms", outcome.alias("outcome")
    )


def _failures(events: DataFrame) -> DataFrame:
    """``topic, group, queue, offset, ts_ms, error`` of retries and dead letters."""
    error = F.get_json_object("details", "$.error")
    return events.filter(
        F.col("type").isin(CONSUME_FAILED, DEAD_LETTERED) & F.col("offset").isNotNull()
    ).select(*QUEUE, "offset", "ts_ms", error.alias("error"))


def _latest_after_start(episodes: DataFrame, facts: DataFrame, value: str) -> DataFrame:
    """``facts``'s latest ``value`` per episode among those at its offset at or after its
    start (``EPISODE_ID`` → ``value``)."""
    joined = episodes.select(*EPISODE_ID).join(facts, [*QUEUE, "offset"])
    return (
        joined.filter(F.col("ts_ms") >= F.col("start_ms"))
        .groupBy(*EPISODE_ID)
        .agg(F.max_by(value, "ts_ms").alias(value))
    )


def _finish(
    episodes: DataFrame, times: DataFrame, events: DataFrame, details: DataFrame, min_s: float
) -> DataFrame:
    # A queue episode's key may be unknown: "" keeps it joinable by its identity.
    keyed = episodes.withColumn("key", F.coalesce(F.col("key"), F.lit("")))
    ended = keyed.join(
        times.withColumnRenamed("ts_ms", "last_seen_ms"), [*QUEUE, "last_seen_ms"], "left"
    )
    is_open = F.col("next_ms").isNull()
    end_ms = F.when(~is_open, F.col("next_ms"))
    # Known to be blocked from its start to its last sighting; it may have moved any time
    # before the next sample, so that one only bounds the end.
    duration = (F.col("last_seen_ms") - F.col("start_ms")) / MS
    timed = (
        ended.withColumn("open", is_open)
        .withColumn("end_ms", end_ms)
        .withColumn("duration_s", duration)
        .filter(F.col("duration_s") >= F.lit(float(min_s)))
        .cache()
    )
    outcome = _latest_after_start(timed, _outcomes(events), "outcome")
    failure = _latest_after_start(timed, _failures(details), "error")
    decided = F.coalesce(
        F.col("outcome"), F.when(F.col("open"), F.lit("open")).otherwise(F.lit("succeeded"))
    )
    error = F.substring(
        F.coalesce(F.col("sample_error"), F.col("error"), F.lit("")), 1, ERROR_CHARS
    )
    return (
        timed.join(outcome, list(EPISODE_ID), "left")
        .join(failure, list(EPISODE_ID), "left")
        .withColumn("outcome", decided)
        .withColumn("error", error)
        .select(*EPISODE_COLUMNS)
    )


def stuck_episodes(
    samples: DataFrame,
    events: DataFrame,
    min_seconds: float,
    event_details: DataFrame | None = None,
) -> DataFrame:
    """Queue-level and key-level episodes lasting at least ``min_seconds``.

    Columns ``EPISODE_COLUMNS``: ``start_ms`` (a key's ``since_ms``, a queue's first stuck
    sample), ``end_ms`` (the first sample that no longer showed it; null while
    ``open``, i.e. it was in the queue's last sample of the day), ``last_seen_ms``,
    ``duration_s`` (from the start to ``last_seen_ms``: the time it is known to have been
    blocked), ``retries`` (the
    most seen), ``max_behind`` (a queue's lag, a key's waiting messages), ``outcome``
    (``dead_lettered``, ``replayed``, ``discarded`` from the latest such event at its
    offset since its start; else ``succeeded``, or ``open``), ``error`` (the latest
    known; from ``event_details``, the events with their ``details``, when given)."""
    columns = (
        *QUEUE,
        "level",
        "key",
        "offset",
        "start_ms",
        "last_seen_ms",
        "retries",
        "max_behind",
        "sample_error",
    )
    found = (
        _queue_stretches(samples)
        .select(*columns)
        .unionByName(_key_blocks(samples).select(*columns))
    )
    details = events if event_details is None else event_details
    return _finish(found, _sample_times(samples), events, details, min_seconds)


def episode_counts(episodes: DataFrame) -> DataFrame:
    """``topic, group, queue, stuck_episodes``."""
    return episodes.groupBy(*QUEUE).agg(F.count(F.lit(1)).alias("stuck_episodes"))
