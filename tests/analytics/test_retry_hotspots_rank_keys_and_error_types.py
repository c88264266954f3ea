from __future__ import annotations

from pyspark.sql import SparkSession

from lockstep.analytics import load, transform
from tests.analytics.builders import at, day_data, event


def test_it_ranks_keys_and_error_types_by_retried_offsets_then_dead_letters(
    spark: SparkSession,
):
    events = [
        event("consume_failed", at(0, 1), key="a", n=3, offset=1, error="ValueError: x"),
        event("consume_failed", at(0, 2), key="a", n=1, offset=1, error="ValueError: x"),
        event("consume_failed", at(0, 3), key="b", n=4, offset=2, error="KeyError: y"),
        event("dead_lettered", at(0, 4), key="b", offset=2, error="KeyError: y"),
        event("consume_failed", at(0, 5), key="c", n=1, offset=3, error="OSError: z"),
        event("dead_lettered", at(0, 6), key="d", offset=4, error="OSError: z"),
        event("consume_failed", at(0, 7), key="a", n=9, group="billing", error="Other: w"),
        event("lock_acquired", at(0, 8), key="a"),  # not a retry
    ]
    hotspots = transform.retry_hotspots(day_data(spark, events=events).events, top_n=2)
    rows = load.rows(hotspots, transform.ORDER["retry_hotspots"])
    as_tuples = [(r["group"], r["kind"], r["name"], r["retries"], r["dead_letters"]) for r in rows]
    assert as_tuples == [
        ("billing", "error", "Other", 9, 0),
        ("billing", "key", "a", 9, 0),
        ("mailer", "error", "KeyError", 4, 1),  # a tie in retries: more dead letters first
        ("mailer", "error", "ValueError", 4, 0),
        ("mailer", "key", "b", 4, 1),
        ("mailer", "key", "a", 4, 0),
    ]
