"""GET /api/v1/overview's numbers beyond the rows: rates in and out (between two readings
of the fleet), retries, dead letters and stuck queues, on a hand-computed history and on
what the real runtime leaves behind."""

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
from tests.dashboard.helpers import (
    get_json,
    group_rows,
    overview_rows,
    produce,
    summary_group,
)
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


def _overview(client: Client, query: str = "") -> dict[str, Any]:
    return get_json(client, f"/api/v1/overview{query}")


def _rates(overview: dict[str, Any]) -> dict[str, float | None]:
    """``orders``' rate in and each group's rate out, by name."""
    (topic,) = overview["summary"]["topics"]
    out = {g["group"]: g["out_per_s"] for g in overview["summary"]["groups"]}
    return {"in": topic["in_per_s"], **out}


def _commit_to(r: redis.Redis, group: str, queue: int, committed: int) -> None:
    """Move ``group``'s committed offset on ``queue`` as a consumer's commit would."""
    r.hset(keys.offset(QueueRef("orders", queue), group), mapping={"committed": committed})


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


def test_it_counts_retries_and_stuck_queues_from_the_history(
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

    overview = _overview(client)
    stuck_rows = overview_rows(client, state="stuck")

    groups = {
        g["group"]: {k: g[k] for k in ("retries_per_min", "dead_letters", "lag", "stuck")}
        for g in overview["summary"]["groups"]
    }
    assert groups == {
        "audit": {"retries_per_min": 0, "dead_letters": 0, "lag": 5, "stuck": 0},
        "mailer": {"retries_per_min": 3, "dead_letters": 0, "lag": 5, "stuck": 1},
    }
    # The most stuck group leads the summary.
    assert [g["group"] for g in overview["summary"]["groups"]] == ["mailer", "audit"]
    assert overview["summary"]["totals"]["stuck"] == 1
    (row,) = stuck_rows
    assert {
        k: row[k]
        for k in ("topic", "group", "queue", "stuck", "stuck_since_ms", "lag", "committed_offset")
    } == {
        "topic": "orders",
        "group": "mailer",
        "queue": 0,
        "stuck": "unowned",
        "stuck_since_ms": now - 90_000,
        "lag": 5,
        "committed_offset": 0,
    }
    assert row["stuck_why"].startswith(
        "queue 0: no consumer holds its lock, lag 5, committed offset 0 has not moved for 1 min"
    )
    # The worst queues: the stuck one first; audit's queue 0 is behind, but not stuck yet.
    worst = [(r["group"], r["queue"], r["stuck"]) for r in overview["worst"]]
    assert worst[0] == ("mailer", 0, "unowned")
    assert ("audit", 0, None) in worst[1:]
    assert [w for w in worst[1:] if w[2] is not None] == []
    assert overview["worst"][0]["stuck_why"] == row["stuck_why"]


def test_it_computes_rates_in_and_out_between_two_readings_a_second_apart(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 2)
    register_group(redis_client, "orders", "mailer")
    register_group(redis_client, "orders", "audit")
    produce(redis_url, "orders", [key_on_queue(0, 2)] * 4)
    client.force_login(viewer)

    before = _overview(client)
    # A rate needs two readings at least a second apart (Redis time).
    probe_until(
        lambda: redis_now_ms(redis_client),
        lambda now: now >= before["swept_at_ms"] + 1000,
        timeout=30,
    )
    # Ten produced (queue 0: 4 -> 10, queue 1: 0 -> 4); mailer handles nine, audit none.
    produce(redis_url, "orders", [key_on_queue(0, 2)] * 6 + [key_on_queue(1, 2)] * 4)
    _commit_to(redis_client, "mailer", 0, 7)
    _commit_to(redis_client, "mailer", 1, 2)
    after = _overview(client)

    assert _rates(before) == {"in": None, "mailer": None, "audit": None}
    elapsed_ms = after["swept_at_ms"] - before["swept_at_ms"]
    assert elapsed_ms >= 1000
    assert _rates(after) == {
        "in": round(10 * 1000 / elapsed_ms, 3),
        "mailer": round(9 * 1000 / elapsed_ms, 3),
        "audit": 0.0,
    }
    lags = {g["group"]: g["lag"] for g in after["summary"]["groups"]}
    assert lags == {"mailer": 14 - 9, "audit": 14}


def test_it_has_no_rate_before_a_second_reading(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 2)
    register_group(redis_client, "orders", "mailer")
    produce(redis_url, "orders", ["order-1"] * 3)
    client.force_login(viewer)

    overview = _overview(client)

    assert _rates(overview) == {"in": None, "mailer": None}
    assert summary_group(overview, "orders", "mailer")["lag"] == 3
    assert overview_rows(client, state="stuck") == []
    # Behind, so worth a look, but not stuck.
    behind = queue_for_key("order-1", 2)
    assert (behind, None) in [(r["queue"], r["stuck"]) for r in overview["worst"]]
    assert [r for r in overview["worst"] if r["stuck"] is not None] == []


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

    (group,) = _overview(client)["summary"]["groups"]
    rows = group_rows(client, "orders", "mailer")

    assert group["dead_letters"] == 1
    assert {q: r["dead_letters"] for q, r in rows.items()} == {
        q: int(q == queue_for_key("order-poison", 2)) for q in range(2)
    }
    # Attempt 1 failed (one consume_failed), attempt 2 reached the limit: dead-lettered.
    assert group["retries_per_min"] == 1
    assert group["lag"] == 0


def test_it_reports_a_key_blocked_too_long_as_stuck(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str, settings: Any
) -> None:
    settings.LOCKSTEP_STUCK_AFTER_SECONDS = 0.5
    create_topic(redis_client, "orders", 2)
    handler = FailOn("order-poison", error="card declined")
    poison, *_ = produce(redis_url, "orders", ["order-poison", "order-poison", "order-ok"])
    client.force_login(viewer)
    blocked = f"queue {poison.queue}, key order-poison blocked at offset {poison.offset} for "

    with consuming(
        redis_url,
        "orders",
        "mailer",
        handler,
        ordering=Ordering.KEY,
        retry_initial_ms=50,
        retry_max_ms=100,
    ):
        overview = probe_until(
            lambda: _overview(client, "?state=stuck"),
            lambda o: any(blocked in r["stuck_why"] for r in o["table"]["rows"]),
        )
        group = get_json(client, "/api/v1/topics/orders/groups/mailer")
        assert handler.count() == 1, "the other key kept flowing"

    (row,) = overview["table"]["rows"]
    assert (row["topic"], row["group"], row["queue"]) == ("orders", "mailer", poison.queue)
    assert row["stuck"] == "blocked_key"
    assert "card declined" in row["stuck_why"]
    assert summary_group(overview, "orders", "mailer")["stuck"] >= 1
    (entry,) = [a for a in group["stuck"] if a["reason"] == "blocked_key"]
    assert (entry["topic"], entry["group"], entry["queue"]) == ("orders", "mailer", poison.queue)
    assert (entry["key"], entry["offset"], entry["waiting"]) == ("order-poison", poison.offset, 1)
    assert entry["retries"] >= 1
    assert entry["for_s"] >= 0.5
    assert "card declined" in entry["error"]
    assert entry["why"].startswith(blocked)
