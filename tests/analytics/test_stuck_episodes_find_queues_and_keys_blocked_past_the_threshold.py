from __future__ import annotations

from datetime import UTC, datetime

from pyspark.sql import SparkSession

from lockstep.analytics import load, transform
from tests.analytics.builders import (
    at,
    blocked_key,
    day_data,
    event,
    sample,
)


def _episodes(spark: SparkSession, samples: list, events: list | None = None, min_s: float = 60):
    data = day_data(spark, samples=samples, events=events or [])
    episodes = transform.stuck_episodes(data.samples, data.events, min_s)
    return load.episode_rows(episodes, transform.ORDER["stuck_episodes"])


def _utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def test_a_queue_stuck_at_one_offset_that_ends_in_a_dead_letter(spark: SparkSession):
    samples = [sample(at(1, 0, s), committed=40, lag=0) for s in (0, 10)]
    # Stuck at offset 50 from 1:00:20 to 1:02:20 (13 samples), then moved at 1:02:30.
    samples += [
        sample(at(1, 0, 20 + 10 * i), committed=50, lag=5 + i, head_key="order-7", retries=i)
        for i in range(13)
    ]
    samples += [sample(at(1, 2, 30), committed=51, lag=0), sample(at(1, 2, 40), committed=51)]
    events = [
        event("consume_failed", at(1, 0, 25), offset=50, n=1, key="order-7", error="KeyError: x"),
        event("dead_lettered", at(1, 2, 25), offset=50, key="order-7", error="KeyError: y"),
        event("dead_lettered", at(0, 30), offset=50, key="order-7"),  # before it: not its outcome
    ]
    [episode] = _episodes(spark, samples, events)
    assert episode["level"] == "queue"
    assert (episode["offset"], episode["key"]) == (50, "order-7")
    assert episode["started_at"] == _utc(at(1, 0, 20))
    assert episode["ended_at"] == _utc(at(1, 2, 25))  # its dead letter moved the queue on
    assert episode["last_seen_at"] == _utc(at(1, 2, 20))
    assert episode["duration_s"] == 125.0  # end - start
    assert (episode["open"], episode["outcome"]) == (False, "dead_lettered")
    assert (episode["retries"], episode["max_behind"]) == (12, 17)
    assert episode["error"] == "KeyError: y"


def test_a_key_still_blocked_at_the_last_sample_of_the_day_is_open(spark: SparkSession):
    since = at(23, 50)
    blocked = [blocked_key("acct-1", 90211, since, retries=12, waiting=37, error="Timeout: db")]
    samples = [
        sample(at(23, 50 + m), lag=40, committed=90000, blocked=blocked, key_ordering=True)
        for m in range(10)
    ]
    [episode] = _episodes(spark, samples)
    assert (episode["level"], episode["key"], episode["offset"]) == ("key", "acct-1", 90211)
    assert episode["open"] is True
    assert episode["ended_at"] is None
    assert episode["outcome"] == "open"
    assert episode["started_at"] == _utc(since)
    assert episode["duration_s"] == 9 * 60.0  # to its last sample
    assert (episode["retries"], episode["max_behind"], episode["error"]) == (12, 37, "Timeout: db")


def test_a_key_that_was_unblocked_succeeded_and_a_replayed_one_says_so(spark: SparkSession):
    one = blocked_key("a", 5, at(2, 0), retries=3)
    two = blocked_key("b", 6, at(2, 0), held=True, error="held")
    samples = [sample(at(2, m), lag=3, blocked=[one, two], key_ordering=True) for m in range(0, 5)]
    samples += [sample(at(2, 5), lag=0, key_ordering=True)]
    events = [event("dead_letter_replayed", at(2, 4, 30), offset=6, key="b")]
    episodes = {e["key"]: e for e in _episodes(spark, samples, events)}
    assert episodes["a"]["outcome"] == "succeeded"
    assert episodes["a"]["ended_at"] == _utc(at(2, 5))
    assert episodes["a"]["duration_s"] == 300.0  # since_ms to the first sample without it
    assert episodes["b"]["outcome"] == "replayed"


def test_shorter_blocks_than_the_threshold_and_blocked_keys_are_not_queue_episodes(
    spark: SparkSession,
):
    short = [sample(at(3, 0, 10 * i), committed=7, lag=2) for i in range(3)]  # 30 s
    short += [sample(at(3, 0, 30), committed=9, lag=0)]  # moved: it lasted 30 s
    # Key ordering: the low-water mark stays while a key is blocked; only the key counts.
    blocked = [blocked_key("k", 11, at(4, 0))]
    keyed = [
        sample(at(4, m), committed=11, lag=9, queue=1, blocked=blocked, key_ordering=True)
        for m in range(3)
    ]
    episodes = _episodes(spark, short + keyed, min_s=60)
    assert [(e["queue"], e["level"]) for e in episodes] == [(1, "key")]
