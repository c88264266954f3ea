from __future__ import annotations

from pyspark.sql import SparkSession

from lockstep.analytics import load, transform
from tests.analytics.builders import at, day_data, sample


def test_each_sample_above_the_threshold_counts_until_the_next_one_capped_at_the_gap(
    spark: SparkSession,
):
    samples = [
        sample(at(0, 0, 0), time_lag_s=301.0),  # above: 10 s to the next
        sample(at(0, 0, 10), time_lag_s=500.0),  # above: 20 s to the next
        sample(at(0, 0, 30), time_lag_s=300.0),  # at the threshold: not above
        sample(at(0, 0, 40), time_lag_s=900.0),  # above: next is 5 min later, capped at 60 s
        sample(at(0, 5, 40), time_lag_s=1.0),
        sample(at(1, 0, 0), time_lag_s=999.0),  # the queue's last sample: nothing after it
        sample(at(0, 0, 0), time_lag_s=999.0, queue=1),  # another queue: 0 s, alone
    ]
    data = day_data(spark, samples=samples)
    with_gaps = transform.with_seconds_above(data.samples, 300.0, 60.0)
    queues = load.rows(
        transform.hourly_queue(with_gaps, transform.produced_per_hour(data.messages))
    )
    by_place = {(q["queue"], q["hour"]): q["seconds_above_threshold"] for q in queues}
    assert by_place == {(0, 0): 90.0, (0, 1): 0.0, (1, 0): 0.0}

    hourly = transform.hourly_queue(with_gaps, transform.produced_per_hour(data.messages))
    groups = load.rows(transform.hourly_group(with_gaps, hourly), transform.ORDER["hourly_group"])
    # A group's figure is its worst queue's, not a sum over queues.
    assert [(g["hour"], g["seconds_above_threshold"]) for g in groups] == [(0, 90.0), (1, 0.0)]
