"""Every queue's stream entries become ``messages`` rows (topic, queue, offset, key,
produce time, body size) in the partition of their produce hour; entries not written by
Lockstep (an ID other than ``<offset>-1``) are moved past, not written."""

from __future__ import annotations

from collections import Counter

import pytest
import redis

from lockstep.analytics.layout import Partition
from lockstep.dashboard.reports.models import DataCursor
from lockstep.dashboard.reports.writer import write_new_data
from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.refs import QueueRef
from tests.dashboard.reports.writing import analytics_uri, files, producer, rows

__all__ = ["analytics_uri", "producer"]

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]


def test_it_writes_one_row_per_message_of_every_queue_of_every_topic(
    analytics_uri: str, redis_client: redis.Redis, producer: Producer
) -> None:
    create_topic(redis_client, "orders", 3)
    create_topic(redis_client, "payments", 1)
    sent = {
        ("orders", f"order-{n}", b"x" * n): producer.send("orders", f"order-{n}", b"x" * n)
        for n in range(12)
    }
    sent[("payments", "pay-1", b"{}")] = producer.send("payments", "pay-1", b"{}")

    written = write_new_data()

    expected = sorted(
        (topic, r.queue, r.offset, key, r.produced_at_ms, len(body))
        for (topic, key, body), r in sent.items()
    )
    found = sorted(
        (r["topic"], r["queue"], r["offset"], r["key"], r["produced_ms"], r["size"])
        for r in rows(analytics_uri, "messages")
    )
    assert written == {"messages": 13, "events": 0, "samples": 0}
    assert found == expected
    hours = {Partition.of_ms(r.produced_at_ms).path("messages") for r in sent.values()}
    assert {f.rsplit("/", 1)[0] for f in files(analytics_uri, "messages")} == hours
    per_queue = Counter(f"messages:{topic}:{r.queue}" for (topic, _, _), r in sent.items())
    assert len(per_queue) == 4  # the keys spread over every queue
    cursors = DataCursor.objects.filter(name__startswith="messages:")
    assert dict(cursors.values_list("name", "position")) == per_queue  # offsets are dense


def test_it_moves_past_entries_not_written_by_lockstep(
    analytics_uri: str, redis_client: redis.Redis, producer: Producer
) -> None:
    create_topic(redis_client, "orders", 1)
    first = [producer.send("orders", f"order-{n}", b"x") for n in range(3)]
    redis_client.xadd(keys.stream(QueueRef("orders", 0)), {"k": "intruder", "b": "y"}, id="2-5")
    later = producer.send("orders", "order-3", b"x")

    assert write_new_data()["messages"] == 4
    assert sorted((r["offset"], r["key"]) for r in rows(analytics_uri, "messages")) == [
        (s.offset, f"order-{n}") for n, s in enumerate([*first, later])
    ]
    assert DataCursor.objects.get(name="messages:orders:0").position == later.offset + 1
