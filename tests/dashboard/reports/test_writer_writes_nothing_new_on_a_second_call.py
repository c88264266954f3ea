"""A call that finds nothing new after the cursors writes nothing: no file is added or
rewritten, and a later call appends only what arrived since."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from lockstep.dashboard.reports.writer import write_new_data
from lockstep.workers import Producer, create_topic
from lockstep.workers import events as ev
from tests.dashboard.reports.writing import analytics_uri, files, ms_of, producer, rows, store

__all__ = ["analytics_uri", "producer"]

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]

NOON = ms_of("2024-03-10T12:00:00")
NOTHING = {"messages": 0, "events": 0, "samples": 0}


def _stamps(uri: str) -> dict[str, int]:
    """Every file of the data set with its modification time (ns)."""
    return {
        f: (Path(uri) / f).stat().st_mtime_ns
        for data_set in ("messages", "events", "samples")
        for f in files(uri, data_set)
    }


def test_it_writes_nothing_when_nothing_arrived_and_only_the_news_later(
    analytics_uri: str, redis_client: redis.Redis, producer: Producer
) -> None:
    create_topic(redis_client, "orders", 2)
    for n in range(5):
        producer.send("orders", f"order-{n}", b"x")
    store(ev.LOCK_ACQUIRED, NOON, topic="orders", group="billing", queue=0, token=1)
    store(ev.LAG_SAMPLED, NOON, topic="orders", group="billing", queue=0, details={"lag": 5})
    assert write_new_data() == {"messages": 5, "events": 1, "samples": 1}
    before = _stamps(analytics_uri)

    assert write_new_data() == NOTHING
    assert _stamps(analytics_uri) == before

    late = producer.send("orders", "order-9", b"x")
    news = store(ev.LOCK_RELEASED, NOON + 1, topic="orders", group="billing", queue=0, token=1)
    assert write_new_data() == {"messages": 1, "events": 1, "samples": 0}
    assert {f: t for f, t in _stamps(analytics_uri).items() if f in before} == before
    assert [r["id"] for r in rows(analytics_uri, "events")].count(news.stream_id) == 1
    assert len(rows(analytics_uri, "events")) == 2
    messages = rows(analytics_uri, "messages")
    assert len(messages) == 6
    assert [(r["queue"], r["offset"]) for r in messages].count((late.queue, late.offset)) == 1
