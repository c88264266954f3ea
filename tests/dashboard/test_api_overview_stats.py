"""GET /api/v1/overview "stats": rates in and out, retries, dead letters and stuck queues,
on a hand-computed history and on what the real runtime leaves behind."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.workers import create_topic, keys
from lockstep.workers import events as ev
from lockstep.workers.config import Ordering
from lockstep.workers.hashing import queue_for_key
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group
from tests.dashboard.helpers import produce
from tests.dashboard.scenarios import (
    FailOn,
    consuming,
    ingest_all,
    ingest_until,
    key_on_queue,
    redis_now_ms,
    write_event,
)
from tests.support import probe_until

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]


def _stats(client: Client) -> dict[str, Any]:
    response = client.get("/api/v1/overview")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body["stats"]


def _sample(
    r: redis.Redis, ts: int, group: str, queue: int, max_offset: int, committed: int
) -> None:
    write_event(
        r,
        ev.LAG_SAMPLED,
        ts,
        topic="orders",
        group=group,
        queue=queue,
        details={
            "max_offset": max_offset,
            "committed_offset": committed,
            "lag": max_offset - committed,
            "time_lag_s": 0.0,
            "owner": "",
        },
    )


def _commit(r: redis.Redis, ts: int, group: str, queue: int, first: int, last: int) -> None:
    write_event(
        r,
        ev.OFFSET_COMMITTED,
        ts,
        topic="orders",
        group=group,
        queue=queue,
        token=1,
        consumer="c1",
        details={"from_offset": first, "offset": last, "commits": last - first + 1},
    )


def test_it_computes_rates_retries_and_stuck_queues_from_the_history(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 2)
    register_group(redis_client, "orders", "mailer")
    register_group(redis_client, "orders", "audit")
    produce(redis_url, "orders", [key_on_queue(0, 2)] * 5)  # queue 0: lag 5 for both groups
    now = redis_now_ms(redis_client)
    # Queue 0, mailer: behind, nobody holds its lock, not moving for 90 s -> stuck.
    for age in (90, 40, 10):
        _sample(redis_client, now - age * 1000, "mailer", 0, 5, 0)
    # Queue 0, audit: behind only for the last 40 s -> not stuck yet.
    _sample(redis_client, now - 90_000, "audit", 0, 0, 0)
    _sample(redis_client, now - 40_000, "audit", 0, 5, 0)
    # Queue 1: 30 messages produced between two samples 30 s apart -> 1.0/s in.
    _sample(redis_client, now - 40_000, "mailer", 1, 10, 10)
    _sample(redis_client, now - 10_000, "mailer", 1, 40, 40)
    # mailer committed 10 before the window, 40 at its end: 30 messages in 60 s.
    _commit(redis_client, now - 70_000, "mailer", 1, 1, 10)
    _commit(redis_client, now - 30_000, "mailer", 1, 11, 25)
    _commit(redis_client, now - 5_000, "mailer", 1, 26, 40)
    # audit: no commit before the window; its first one moved 3..7, i.e. 5 messages.
    _commit(redis_client, now - 20_000, "audit", 1, 3, 7)
    # Three failed attempts in the window, one before it.
    for age in (70, 20, 15, 10):
        write_event(
            redis_client,
            ev.CONSUME_FAILED,
            now - age * 1000,
            topic="orders",
            group="mailer",
            queue=0,
            key="k",
            details={"error": "boom"},
        )
    ingest_all(redis_client)
    client.force_login(viewer)

    stats = _stats(client)

    assert stats["window_s"] == 60
    assert stats["topics"] == [
        {
            "name": "orders",
            "in_per_s": 1.0,
            "groups": [
                {
                    "group": "audit",
                    "out_per_s": 0.083,
                    "retries_per_min": 0,
                    "dead_letters": 0,
                    "lag": 5,
                    "stuck": 0,
                },
                {
                    "group": "mailer",
                    "out_per_s": 0.5,
                    "retries_per_min": 3,
                    "dead_letters": 0,
                    "lag": 5,
                    "stuck": 1,
                },
            ],
        }
    ]
    (alert,) = stats["stuck"]
    assert {
        k: alert[k]
        for k in ("topic", "group", "queue", "reason", "since_ms", "lag", "committed_offset")
    } == {
        "topic": "orders",
        "group": "mailer",
        "queue": 0,
        "reason": "unowned",
        "since_ms": now - 90_000,
        "lag": 5,
        "committed_offset": 0,
    }
    assert alert["for_s"] >= 90
    assert alert["why"].startswith(
        "queue 0: no consumer holds its lock, lag 5, committed offset 0 has not moved for 1 min"
    )


def test_it_has_no_rate_in_without_lag_samples(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 2)
    register_group(redis_client, "orders", "mailer")
    produce(redis_url, "orders", ["order-1"] * 3)
    client.force_login(viewer)

    stats = _stats(client)

    assert stats["topics"][0]["in_per_s"] is None
    assert stats["topics"][0]["groups"][0]["out_per_s"] == 0.0
    assert stats["stuck"] == []


def test_it_counts_the_dead_letters_and_retries_the_runtime_left(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 2)
    handler = FailOn("order-poison")
    produce(redis_url, "orders", ["order-poison", "order-ok"])
    with consuming(redis_url, "orders", "mailer", handler, max_reconsume_times=1, suspend_ms=10):
        dlq = keys.dead_letters(QueueRef("orders", queue_for_key("order-poison", 2)), "mailer")
        probe_until(lambda: redis_client.xlen(dlq), lambda n: n == 1)
        probe_until(handler.count, lambda n: n == 1)
    ingest_until(redis_client, ev.DEAD_LETTERED)
    client.force_login(viewer)

    (group,) = _stats(client)["topics"][0]["groups"]

    assert group["dead_letters"] == 1
    # Attempt 1 failed (one consume_failed), attempt 2 reached the limit: dead-lettered.
    assert group["retries_per_min"] == 1
    assert group["lag"] == 0


def test_it_raises_a_stuck_alert_for_a_key_blocked_too_long(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str, settings: Any
) -> None:
    settings.LOCKSTEP_STUCK_AFTER_SECONDS = 0.5
    create_topic(redis_client, "orders", 2)
    handler = FailOn("order-poison", error="card declined")
    poison, *_ = produce(redis_url, "orders", ["order-poison", "order-poison", "order-ok"])
    client.force_login(viewer)

    with consuming(
        redis_url,
        "orders",
        "mailer",
        handler,
        ordering=Ordering.KEY,
        retry_initial_ms=50,
        retry_max_ms=100,
    ):
        stats = probe_until(
            lambda: _stats(client), lambda s: any(a["reason"] == "blocked_key" for a in s["stuck"])
        )
        assert handler.count() == 1, "the other key kept flowing"

    (alert,) = [a for a in stats["stuck"] if a["reason"] == "blocked_key"]
    assert (alert["topic"], alert["group"], alert["queue"]) == ("orders", "mailer", poison.queue)
    assert (alert["key"], alert["offset"], alert["waiting"]) == ("order-poison", poison.offset, 1)
    assert alert["retries"] >= 1
    assert alert["for_s"] >= 0.5
    assert "card declined" in alert["error"]
    assert alert["why"].startswith(
        f"queue {poison.queue}, key order-poison blocked at offset {poison.offset} for "
    )
