"""A stream trimmed past a queue's cursor (its MAXLEN, while the writer was away) is
continued from its first remaining entry, and the offsets it lost are logged."""

from __future__ import annotations

import logging

import pytest
import redis

from lockstep.dashboard.reports.models import DataCursor
from lockstep.dashboard.reports.writer import write_new_data
from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.refs import QueueRef
from tests.dashboard.reports.writing import analytics_uri, producer, rows

__all__ = ["analytics_uri", "producer"]

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]

QUEUE = QueueRef("orders", 0)


def test_it_continues_after_the_trimmed_offsets_and_says_how_many_were_missed(
    analytics_uri: str,
    redis_client: redis.Redis,
    producer: Producer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    create_topic(redis_client, "orders", 1)
    for n in range(10):
        producer.send("orders", f"order-{n}", b"x")
    assert write_new_data()["messages"] == 10
    for n in range(10, 20):
        producer.send("orders", f"order-{n}", b"x")
    redis_client.xtrim(keys.stream(QUEUE), maxlen=5, approximate=False)  # 15..19 remain

    with caplog.at_level(logging.WARNING, logger="lockstep.dashboard.reports.writer"):
        assert write_new_data()["messages"] == 5

    assert sorted(r["offset"] for r in rows(analytics_uri, "messages")) == [
        *range(10),
        *range(15, 20),
    ]
    assert DataCursor.objects.get(name="messages:orders:0").position == 20
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "orders/0 offsets 10..14 were trimmed" in warning
    assert "(5 missed)" in warning
