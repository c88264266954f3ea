"""A call that fails after writing a batch's files but before moving its cursors (a
crash, a database error) is followed by one that writes the same batch again under the
same file names: the files are replaced, each row is in the data set exactly once, even
when more arrived in between (docs/analytics.md §2)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import redis

from lockstep.dashboard.reports import writer
from lockstep.dashboard.reports.models import DataCursor
from lockstep.dashboard.reports.writer import write_new_data
from lockstep.workers import Producer, create_topic
from lockstep.workers import events as ev
from tests.dashboard.reports.writing import analytics_uri, files, ms_of, producer, rows, store

__all__ = ["analytics_uri", "producer"]

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]

NOON = ms_of("2024-03-10T12:00:00")


class DatabaseWentAway(Exception):
    pass


def _failing_commit(*args: Any, **kwargs: Any) -> None:
    raise DatabaseWentAway("the cursor could not be saved")


def test_it_rewrites_an_events_batch_whose_cursor_did_not_move(
    analytics_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = [
        store(ev.CONSUME_FAILED, NOON + 1000 * n, topic="orders", group="g", details={"n": n})
        for n in range(3)
    ] + [store(ev.LAG_SAMPLED, NOON + 3_599_000, topic="orders", group="g", details={})]
    monkeypatch.setattr(writer, "_commit", _failing_commit)
    with pytest.raises(DatabaseWentAway):
        write_new_data()
    assert len(rows(analytics_uri, "events")) == 3  # the files were written
    assert not DataCursor.objects.filter(name="events").exists()
    # More arrives, in the same hours and a later one, before the next call.
    later = [
        store(ev.CONSUME_FAILED, NOON + 5000, topic="orders", group="g"),
        store(ev.CONSUME_FAILED, NOON + 3_600_000, topic="orders", group="g"),
        store(ev.LAG_SAMPLED, NOON + 3_599_500, topic="orders", group="g", details={}),
    ]
    monkeypatch.undo()

    assert write_new_data() == {"messages": 0, "events": 5, "samples": 2}

    ids = Counter(r["id"] for r in rows(analytics_uri, "events"))
    assert ids == Counter(e.stream_id for e in first + later if e.type != ev.LAG_SAMPLED)
    assert sorted(r["ts_ms"] for r in rows(analytics_uri, "samples")) == [
        NOON + 3_599_000,
        NOON + 3_599_500,
    ]
    assert files(analytics_uri, "events") == [
        f"events/date=2024-03-10/hour=12/part-e{first[0].pk}.parquet",
        f"events/date=2024-03-10/hour=13/part-e{first[0].pk}.parquet",
    ]
    assert DataCursor.objects.get(name="events").position == later[-1].pk


def test_it_rewrites_a_messages_batch_exactly_as_planned(
    analytics_uri: str,
    redis_client: redis.Redis,
    producer: Producer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    create_topic(redis_client, "orders", 2)
    sent = [producer.send("orders", f"order-{n}", b"x") for n in range(6)]
    monkeypatch.setattr(writer, "_commit", _failing_commit)
    with pytest.raises(DatabaseWentAway):
        write_new_data()
    assert len(rows(analytics_uri, "messages")) == 6
    sent += [producer.send("orders", f"order-{n}", b"x") for n in range(6, 10)]
    monkeypatch.undo()

    assert write_new_data()["messages"] == 10

    written = Counter((r["queue"], r["offset"]) for r in rows(analytics_uri, "messages"))
    assert written == Counter((s.queue, s.offset) for s in sent)
    names = {f.rsplit("/", 1)[1] for f in files(analytics_uri, "messages")}
    assert names == {"part-m0.parquet", "part-m1.parquet"}  # the failed batch, then the news
    assert not DataCursor.objects.filter(name__startswith="messages-plan:").exists()
    assert write_new_data()["messages"] == 0
