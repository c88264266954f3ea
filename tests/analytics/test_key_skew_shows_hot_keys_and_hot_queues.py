from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from lockstep.analytics import load, transform
from tests.analytics.builders import at, day_data, message


def test_a_skewed_queue_stands_out_by_its_hot_key_and_its_share_of_the_topic(
    spark: SparkSession,
):
    messages = []
    for q in (0, 1, 2):  # even queues: 10 keys x 2 messages
        messages += [message(at(0, 1), f"q{q}-k{k}", queue=q) for k in range(10) for _ in range(2)]
    # Queue 3: 60 messages, "hot" carries 45 of them, 15 other keys one each.
    messages += [message(at(1, 1), "hot", queue=3) for _ in range(45)]
    messages += [message(at(1, 1), f"cold{k}", queue=3) for k in range(15)]
    skew = transform.key_skew(day_data(spark, messages=messages).messages)
    rows = load.rows(skew, transform.ORDER["key_skew"])

    assert [r["queue"] for r in rows] == [0, 1, 2, 3]
    even, skewed = rows[0], rows[3]
    assert (even["messages"], even["keys"], even["top_key_share"]) == (20, 10, 0.1)
    assert even["top10_share"] == 1.0
    assert even["max_over_mean"] == 1.0
    assert (skewed["messages"], skewed["keys"], skewed["top_key"]) == (60, 16, "hot")
    assert skewed["top_key_share"] == 0.75
    assert skewed["top10_share"] == pytest.approx(54 / 60)
    assert skewed["max_over_mean"] == pytest.approx(45 / (60 / 16))
    assert skewed["share_of_topic"] == pytest.approx(60 / 120)
    assert skewed["over_topic_mean"] == pytest.approx(60 / 30)  # mean of 20, 20, 20, 60
