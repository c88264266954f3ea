from __future__ import annotations

from pyspark.sql import SparkSession

from lockstep.analytics import load, transform
from tests.analytics.builders import at, day_data, sample


def _hourly(spark: SparkSession, samples: list, threshold_s: float = 300.0, gap_s: float = 60.0):
    data = day_data(spark, samples=samples)
    with_gaps = transform.with_seconds_above(data.samples, threshold_s, gap_s)
    produced = transform.produced_per_hour(data.messages)
    queues = transform.hourly_queue(with_gaps, produced)
    groups = transform.hourly_group(with_gaps, queues)
    order = transform.ORDER
    return load.rows(queues, order["hourly_queue"]), load.rows(groups, order["hourly_group"])


def test_it_gives_nearest_rank_percentiles_of_offset_and_time_lag_per_hour(spark: SparkSession):
    # Hour 0 of queue 0: lags 1..20 (p50 = 10th value, p95 = 19th, p99 = 20th).
    hour0 = [sample(at(0, i), lag=i + 1, time_lag_s=(i + 1) / 2) for i in range(20)]
    # Hour 1: four samples; p50 of [7, 3, 9, 1] sorted [1, 3, 7, 9] is 3 (2nd of 4).
    hour1 = [sample(at(1, i), lag=v, time_lag_s=float(v)) for i, v in enumerate([7, 3, 9, 1])]
    queues, groups = _hourly(spark, hour0 + hour1)

    first, second = queues
    assert (first["hour"], first["samples"]) == (0, 20)
    assert (first["lag_p50"], first["lag_p95"], first["lag_p99"], first["lag_max"]) == (
        10,
        19,
        20,
        20,
    )
    assert (first["time_lag_p50"], first["time_lag_p99"], first["time_lag_max"]) == (
        5.0,
        10.0,
        10.0,
    )
    assert (second["hour"], second["lag_p50"], second["lag_p95"], second["lag_max"]) == (1, 3, 9, 9)
    assert [g["lag_p50"] for g in groups] == [10, 3]


def test_group_percentiles_pool_every_queue_of_the_hour(spark: SparkSession):
    # Queue 0 lags 1, 2; queue 1 lags 100, 200: pooled [1, 2, 100, 200], p50 = 2, p95 = 200.
    samples = [
        sample(at(0, 0), lag=1, queue=0),
        sample(at(0, 1), lag=2, queue=0),
        sample(at(0, 0), lag=100, queue=1),
        sample(at(0, 1), lag=200, queue=1),
    ]
    queues, groups = _hourly(spark, samples)
    assert [q["lag_p50"] for q in queues] == [1, 100]
    assert len(groups) == 1
    assert (groups[0]["samples"], groups[0]["lag_p50"], groups[0]["lag_p95"]) == (4, 2, 200)
