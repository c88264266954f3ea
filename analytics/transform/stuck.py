"""Stuck episodes (docs/analytics.md §4): every stretch in which a queue or a key made no
progress while work waited, at least the stuck threshold long, with when it started and
ended, the message that caused it (its retries, its last handler error) and how it ended.

Every row agrees with itself: ``duration_s`` is ``end_ms - start_ms`` exactly (for an open
episode, its last sighting minus its start), and an episode has an ``end_ms`` exactly when
its ``outcome`` is not ``open``."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from lockstep.analytics.transform.common import (
    CONSUME_FAILED,
    DEAD_LETTER_DISCARDED,
    DEAD_LETTER_REPLAYED,
    DEAD_LETTERED,
    MS,
    QUEUE,
)

KEY_RELEASED = "key_released"  # workers/events.py: a held key's parked set drained

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
# What names one episode: its place, level, blocking key and offset, and when it was first
# sighted (a natural key rather than a generated id, which could differ if a frame were
# recomputed).
EPISODE_ID = (*QUEUE, "level", "key", "offset", "seen_ms")

# Event type -> the outcome it gives an episode at its offset.
_OUTCOMES = {
    DEAD_LETTERED: "dead_lettered",
    DEAD_LETTER_REPLAYED: "replayed",
    DEAD_LETTER_DISCARDED: "discarded",
}
# What the samples tell of an episode, before the events complete it.
_FOUND = (
    *QUEUE,
    "level",
    "key",
    "offset",
    "seen_ms",
    "sample_start_ms",
    "last_seen_ms",
    "sample_retries",
    "max_behind",
    "sample_error",
)


def _sample_times(samples: DataFrame) -> DataFrame:
    """``topic, group, queue, ts_ms, next_ms``: each sample time of a queue and the one
    after it (null for the day's last)."""
    in_order = Window.partitionBy(*QUEUE).orderBy("ts_ms")
    return (
        samples.select(*QUEUE, "ts_ms")
        .distinct()
        .withColumn("next_ms", F.lead("ts_ms").over(in_order))
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
        F.min("ts_ms").alias("seen_ms"),
        F.min("ts_ms").alias("sample_start_ms"),
        F.max("ts_ms").alias("last_seen_ms"),
        F.max("retries").cast("long").alias("sample_retries"),
        F.max("lag").alias("max_behind"),
        F.lit(None).cast("string").alias("sample_error"),
    )


def _key_blocks(samples: DataFrame) -> DataFrame:
    """Each (key, offset) listed in a queue's samples' ``blocked_keys``. A held key's
    sighting says when the hold began and carries no retries or error ("held"): only the
    sightings of it blocked (retrying) tell of the message's failures."""
    listed = samples.select(*QUEUE, "ts_ms", F.explode("blocked_keys").alias("b")).select(
        *QUEUE, "ts_ms", "b.*"
    )
    held = F.coalesce(F.col("held"), F.col("error") == "held", F.lit(False))
    failing = ~held
    return listed.groupBy(*QUEUE, "key", "offset").agg(
        F.lit("key").alias("level"),
        F.min("ts_ms").alias("seen_ms"),
        F.coalesce(
            F.min(F.when(failing, F.col("since_ms"))), F.min("since_ms"), F.min("ts_ms")
        ).alias("sample_start_ms"),
        F.max("ts_ms").alias("last_seen_ms"),
        F.max(F.when(failing, F.col("retries"))).cast("long").alias("sample_retries"),
        F.coalesce(F.max("waiting"), F.lit(0)).cast("long").alias("max_behind"),
        F.max_by(F.when(failing, F.col("error")), F.when(failing, F.col("ts_ms"))).alias(
            "sample_error"
        ),
    )


def _failure_chains(details: DataFrame) -> DataFrame:
    """One row per failure chain of a message: its failures (``consume_failed``) at an
    offset up to and including the ``dead_lettered`` that ends them; the next failure at
    that offset (a replayed message failing again) begins a new chain. Columns
    ``topic, group, queue, offset, first_ms, chain_retries, chain_error, dead_ms``."""
    failures = details.filter(
        F.col("type").isin(CONSUME_FAILED, DEAD_LETTERED) & F.col("offset").isNotNull()
    ).select(
        *QUEUE,
        "offset",
        "ts_ms",
        "type",
        "reconsume_times",
        F.get_json_object("details", "$.reconsume_times").cast("long").alias("told_times"),
        F.get_json_object("details", "$.error").alias("error"),
    )
    in_order = Window.partitionBy(*QUEUE, "offset").orderBy("ts_ms", F.col("type").desc())
    closed_before = F.coalesce(
        F.sum((F.col("type") == DEAD_LETTERED).cast("int")).over(
            in_order.rowsBetween(Window.unboundedPreceding, -1)
        ),
        F.lit(0),
    )
    times = F.coalesce(F.col("reconsume_times").cast("long"), F.col("told_times"))
    return (
        failures.withColumn("chain", closed_before)
        .groupBy(*QUEUE, "offset", "chain")
        .agg(
            F.min("ts_ms").alias("first_ms"),
            F.max(times).alias("chain_retries"),
            F.max_by("error", F.when(F.col("error").isNotNull(), F.col("ts_ms"))).alias(
                "chain_error"
            ),
            F.min(F.when(F.col("type") == DEAD_LETTERED, F.col("ts_ms"))).alias("dead_ms"),
        )
        .drop("chain")
    )


def _with_chain(found: DataFrame, chains: DataFrame) -> DataFrame:
    """Each episode with the failure chain of its message: the latest one at its offset
    that began by its last sighting (null columns when none)."""
    joined = found.join(chains, [*QUEUE, "offset"], "left")
    chain_columns = ("first_ms", "chain_retries", "chain_error", "dead_ms")
    began = F.col("first_ms") <= F.col("last_seen_ms")  # null (no chain) is not taken
    latest = F.when(began, F.struct(*(F.col(c) for c in chain_columns)))
    picked = joined.groupBy(*_FOUND).agg(
        F.max_by(latest, F.when(began, F.col("first_ms"))).alias("c")
    )
    return picked.select(*_FOUND, *(F.col(f"c.{c}").alias(c) for c in chain_columns))


def _releases(events: DataFrame) -> DataFrame:
    """``topic, group, queue, key, released_ms`` of every ``key_released``."""
    return events.filter(F.col("type") == KEY_RELEASED).select(
        *QUEUE, "key", F.col("ts_ms").alias("released_ms")
    )


def _first_release(episodes: DataFrame, events: DataFrame) -> DataFrame:
    """``EPISODE_ID`` → ``released_ms``: the first release of a key episode's key at or
    after its last sighting (a held key's hold ends there)."""
    keyed = episodes.filter(F.col("level") == "key").select(*EPISODE_ID, "last_seen_ms")
    return (
        keyed.join(_releases(events), [*QUEUE, "key"])
        .filter(F.col("released_ms") >= F.col("last_seen_ms"))
        .groupBy(*EPISODE_ID)
        .agg(F.min("released_ms").alias("released_ms"))
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


def _outcome_since(episodes: DataFrame, events: DataFrame) -> DataFrame:
    """``EPISODE_ID`` → ``outcome``: the latest outcome event at an ended episode's
    offset at or after its start. It may come after the end: a dead letter that moved a
    queue on (its end) and was replayed later made the message's outcome ``replayed``."""
    ended = episodes.filter(F.col("end_ms").isNotNull()).select(*EPISODE_ID, "start_ms")
    return (
        ended.join(_outcomes(events), [*QUEUE, "offset"])
        .filter(F.col("ts_ms") >= F.col("start_ms"))
        .groupBy(*EPISODE_ID)
        .agg(F.max_by("outcome", "ts_ms").alias("outcome"))
    )


def _least(*columns: Column) -> Column:
    """The smallest non-null of ``columns`` (null when all are)."""
    return F.least(*columns)  # Spark's least skips nulls


def _timed(found: DataFrame, times: DataFrame, events: DataFrame, min_s: float) -> DataFrame:
    """Start, end, openness, duration, retries and error; only episodes known to have
    been blocked at least ``min_s``."""
    after = times.withColumnRenamed("ts_ms", "last_seen_ms")
    sighted = found.join(after, [*QUEUE, "last_seen_ms"], "left")
    start = _least(F.col("sample_start_ms"), F.col("first_ms"))
    known = (F.col("last_seen_ms") - F.col("start_ms")) / MS
    with_start = sighted.withColumn("start_ms", start).filter(known >= F.lit(float(min_s)))
    released = _first_release(with_start, events)
    dead_end = F.when(F.col("dead_ms") >= F.col("last_seen_ms"), F.col("dead_ms"))
    end = _least(F.col("next_ms"), F.col("released_ms"), dead_end)
    ended_at = F.coalesce(end, F.col("last_seen_ms"))
    error = F.coalesce(F.col("chain_error"), F.col("sample_error"), F.lit(""))
    retries = F.greatest(F.col("sample_retries"), F.col("chain_retries"))  # skips nulls
    return (
        with_start.join(released, list(EPISODE_ID), "left")
        .withColumn("end_ms", end)
        .withColumn("open", end.isNull())
        .withColumn("duration_s", (ended_at - F.col("start_ms")) / MS)
        .withColumn("retries", F.coalesce(retries, F.lit(0)).cast("long"))
        .withColumn("error", F.substring(error, 1, ERROR_CHARS))
    )


def stuck_episodes(
    samples: DataFrame,
    events: DataFrame,
    min_seconds: float,
    event_details: DataFrame | None = None,
) -> DataFrame:
    """Queue-level and key-level episodes known to have lasted at least ``min_seconds``
    (from their start to their last sighting), as docs/analytics.md §4 defines them.

    Columns ``EPISODE_COLUMNS``: ``start_ms`` (the first failure of the message that
    caused it, or its first sighting if earlier or if none failed), ``end_ms`` (when
    progress resumed: the key's release, its message's dead letter, or the first sample
    that no longer showed it, whichever came first at or after its last sighting; null
    while ``open``), ``last_seen_ms``, ``duration_s`` (``end_ms - start_ms``; for an open
    one ``last_seen_ms - start_ms``), ``retries`` and ``error`` (of the message that
    caused it: its failure events at that offset, from ``event_details`` when given, else
    the samples), ``max_behind`` (a queue's lag, a key's waiting messages), ``outcome``
    (``open`` while open; else the latest ``dead_lettered``, ``replayed``, ``discarded``
    at its offset since its start; else ``succeeded``)."""
    found = (
        _queue_stretches(samples)
        .select(*_FOUND)
        .unionByName(_key_blocks(samples).select(*_FOUND))
        # A queue episode's key may be unknown: "" keeps it joinable by its identity.
        .withColumn("key", F.coalesce(F.col("key"), F.lit("")))
    )
    details = events if event_details is None else event_details
    timed = _timed(
        _with_chain(found, _failure_chains(details)), _sample_times(samples), events, min_seconds
    ).cache()
    decided = F.when(F.col("open"), F.lit("open")).otherwise(
        F.coalesce(F.col("outcome"), F.lit("succeeded"))
    )
    return (
        timed.join(_outcome_since(timed, events), list(EPISODE_ID), "left")
        .withColumn("outcome", decided)
        .select(*EPISODE_COLUMNS)
    )


def episode_counts(episodes: DataFrame) -> DataFrame:
    """``topic, group, queue, stuck_episodes``."""
    return episodes.groupBy(*QUEUE).agg(F.count(F.lit(1)).alias("stuck_episodes"))
