"""A tick of the lag sampler writes one ``lag_sampled`` stream entry per (topic, group,
owner) and at most 256 queues, not one per (queue, group): the stream's load follows the
consumers. The ingester stores such a batch as one row per (queue, group), each the
sample that queue had before batching, under ``<stored id>/<queue>``; a batch stored
again stores nothing, a malformed sample is skipped with the others kept, and a sample
written one per queue (an older beat's) is stored as it is (docs/events.md §2)."""

from __future__ import annotations

import json
import logging
from collections import Counter
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.monitor.ingest import ROWS_PER_READ, read_count, store_batch
from lockstep.dashboard.monitor.tasks import (
    SAMPLES_PER_EVENT,
    lag_samples,
    sample_batches,
    sample_lag,
)
from lockstep.dashboard.web.store.models import Event, IngestCursor
from lockstep.dashboard.web.store.queries import to_ms
from lockstep.workers import create_topic, keys
from lockstep.workers import events as ev
from lockstep.workers.inspect import redis_now_ms
from lockstep.workers.redis_types import entries
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group
from tests.dashboard.scenarios import ingest_all

pytestmark = [pytest.mark.django_db, pytest.mark.on_postgres]

QUEUES = 300
# (group, owner) -> the queues it holds; the rest of each group's queues are unowned.
OWNED = {
    ("mailer", "alpha"): range(0, 200),
    ("mailer", "beta"): range(200, 260),
    ("auditor", "alpha"): range(0, 280),  # more than SAMPLES_PER_EVENT: two entries
}
# (group, owner) -> its entries in a tick, counted by hand: ceil(queues / 256) each.
ENTRIES = {
    ("mailer", "alpha"): 1,
    ("mailer", "beta"): 1,
    ("mailer", ""): 1,  # queues 260..299
    ("auditor", "alpha"): 2,  # 256 + 24
    ("auditor", ""): 1,  # queues 280..299
}


def _fleet(client: redis.Redis) -> None:
    """orders (300 queues), groups mailer and auditor, each queue 7 messages long and
    committed up to its number mod 5; the locks of ``OWNED`` held by consumers alpha
    and beta (no cards: they read ``no_live_consumer``)."""
    create_topic(client, "orders", QUEUES)
    register_group(client, "orders", "mailer")
    register_group(client, "orders", "auditor")
    now = redis_now_ms(client)
    pipe = client.pipeline(transaction=False)
    for q in range(QUEUES):
        pipe.set(keys.sequence(QueueRef("orders", q)), 7)
        for group in ("mailer", "auditor"):
            pipe.hset(keys.offset(QueueRef("orders", q), group), "committed", q % 5)
    for (group, owner), queues in OWNED.items():
        for q in queues:
            pipe.hset(
                keys.lock(QueueRef("orders", q), group),
                mapping={"owner": owner, "token": q + 1, "expires_at": now + 60_000},
            )
    pipe.execute()


def _sampled(client: redis.Redis) -> list[dict[str, Any]]:
    return [e for e in ev.read_all_events(client, shards=1) if e["type"] == ev.LAG_SAMPLED]


def _stored() -> dict[tuple[str, int], Event]:
    rows = Event.objects.filter(type=ev.LAG_SAMPLED)
    found = {(r.group, r.queue): r for r in rows if r.queue is not None}
    assert len(found) == rows.count(), "one row per (group, queue)"
    return found


def test_a_tick_writes_one_entry_per_group_owner_and_256_queues(
    redis_client: redis.Redis,
) -> None:
    _fleet(redis_client)

    written = sample_lag()

    sampled = _sampled(redis_client)
    assert written == len(sampled) == sum(ENTRIES.values()) == 6  # not 600
    assert Counter((e["group"], e["consumer"]) for e in sampled) == ENTRIES
    assert {(e["topic"], e["queue"]) for e in sampled} == {("orders", None)}
    chunks = [
        [s["queue"] for s in e["details"]["samples"]]
        for e in sampled
        if (e["group"], e["consumer"]) == ("auditor", "alpha")
    ]
    assert chunks == [list(range(0, SAMPLES_PER_EVENT)), list(range(SAMPLES_PER_EVENT, 280))]
    for e in sampled:
        queues = [s["queue"] for s in e["details"]["samples"]]
        assert queues == sorted(queues)
        assert {s["owner"] for s in e["details"]["samples"]} == {e["consumer"]}
        assert len(json.dumps(e["details"])) < 100_000


def test_the_ingester_stores_each_queue_as_its_own_sample_once(
    redis_client: redis.Redis,
) -> None:
    _fleet(redis_client)
    samples = lag_samples(redis_client)
    ev.append(redis_client, sample_batches(samples), shards=1)
    read = entries(redis_client.xrange(keys.EVENTS))

    batch = store_batch(read)

    stored = _stored()
    assert len(stored) == len(batch.new_events) == QUEUES * 2
    assert {
        key: (to_ms(r.ts), r.topic, r.consumer, r.key, r.token, r.details)
        for key, r in stored.items()
    } == {
        (s.group, s.queue): (s.ts_ms, s.topic, "", "", None, s.details)
        for s in samples
        if s.queue is not None
    }
    assert stored[("mailer", 3)].details["lag"] == 7 - 3
    assert stored[("mailer", 3)].details["owner"] == "alpha"
    assert sorted(r.stream_id for r in stored.values()) == sorted(
        f"{entry_id.decode()}/{s['queue']}"
        for entry_id, raw in read
        for s in json.loads(raw[b"details"])["samples"]
    )

    # The same batch again (the cursor lost with a database restored from a backup):
    IngestCursor.objects.all().delete()
    again = store_batch(read)

    assert again.new_events == []
    assert Event.objects.count() == QUEUES * 2


def test_a_malformed_sample_is_skipped_and_an_old_per_queue_sample_kept(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    good = {"max_offset": 7, "committed_offset": 2, "lag": 5, "owner": "alpha"}
    samples: list[Any] = [
        {"queue": 0, **good},
        "not a sample",
        {"lag": 1},  # no queue
        {"queue": "1", **good},
        {"queue": True, **good},
        {"queue": -1, **good},
        {"queue": 2**31, **good},
        {"queue": 5, **good},
        {"queue": 5, **good, "lag": 99},  # a queue repeated: its first sample is kept
    ]
    batch = ev.Event(
        ev.LAG_SAMPLED,
        1_795_000_000_000,
        "orders",
        "mailer",
        consumer="alpha",
        details={"samples": samples},
    )
    old = ev.Event(ev.LAG_SAMPLED, 1_795_000_000_000, "orders", "mailer", 7, details=good)
    ev.append(redis_client, [batch, old], shards=1)
    (batch_id, _), (old_id, _) = read = entries(redis_client.xrange(keys.EVENTS))
    caplog.set_level(logging.WARNING)

    store_batch(read)

    stored = _stored()
    assert sorted(stored) == [("mailer", 0), ("mailer", 5), ("mailer", 7)]
    assert stored[("mailer", 0)].details == good
    assert stored[("mailer", 5)].details == good
    assert stored[("mailer", 0)].stream_id == f"{batch_id.decode()}/0"
    assert (stored[("mailer", 7)].stream_id, stored[("mailer", 7)].details) == (
        old_id.decode(),
        good,
    )
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "7 of the 9 lag samples" in warned[0], warned


def test_the_event_feed_pages_after_a_stored_sample(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    create_topic(redis_client, "orders", 2)
    register_group(redis_client, "orders", "mailer")
    sample_lag()
    ingest_all(redis_client)
    first = Event.objects.filter(type=ev.LAG_SAMPLED).order_by("id").first()
    assert first is not None and "/" in first.stream_id
    client.force_login(viewer)

    response = client.get(f"/api/v1/events?after={first.stream_id}")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["cursor_found"] is True
    assert [e["queue"] for e in body["events"]] == [1]


def test_a_stream_whose_entries_expand_is_read_in_fewer_entries_next() -> None:
    plain = read_count(1000, 1000, 1000)
    samples = read_count(1000, 1000, 256_000)
    after_samples = read_count(1000, samples, samples * 10)

    assert plain == 1000
    assert samples * 256 <= ROWS_PER_READ < (samples + 1) * 256
    assert after_samples == min(1000, ROWS_PER_READ // 10)
    assert read_count(1000, 0, 0) == 1000
    assert read_count(1000, 1, 10**9) == 1
