from __future__ import annotations

from pyspark.sql import SparkSession

from lockstep.analytics import load, transform
from tests.analytics.builders import at, day_data, message, sample


def test_produced_is_messages_by_produce_hour_and_consumed_is_committed_growth(
    spark: SparkSession,
):
    messages = [message(at(0, m), f"k{m}") for m in range(3)] + [
        message(at(2, m), "k9") for m in range(5)
    ]
    samples = [
        sample(at(0, 0), committed=100),  # the day starts at 100
        sample(at(0, 30), committed=130),
        sample(at(0, 59), committed=150),  # hour 0: 150 - 100 = 50
        sample(at(1, 10), committed=150),  # hour 1: nothing
        sample(at(2, 0), committed=400),
        sample(at(2, 50), committed=10),  # a reset: hour 2 counts 0, never negative
        sample(at(3, 0), committed=25),  # hour 3: 25 - 10 = 15
    ]
    data = day_data(spark, messages=messages, samples=samples)
    with_gaps = transform.with_seconds_above(data.samples, 300.0, 60.0)
    hourly = transform.hourly_queue(with_gaps, transform.produced_per_hour(data.messages))
    rows = load.rows(hourly, transform.ORDER["hourly_queue"])
    assert [(r["hour"], r["produced"], r["consumed"]) for r in rows] == [
        (0, 3, 50),
        (1, 0, 0),
        (2, 5, 0),
        (3, 0, 15),
    ]
