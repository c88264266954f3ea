"""GET /api/v1/topics/<topic>/groups/<group> (and its page): per queue the lock, offsets,
lag and state; under key ordering the lanes, blocked keys and parked keys."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.workers import create_topic
from lockstep.workers import events as ev
from lockstep.workers.config import AfterDlq, Ordering
from lockstep.workers.topics import groups_of, register_group
from tests.dashboard.helpers import per_queue, produce
from tests.dashboard.scenarios import FailOn, consuming, ingest_until
from tests.support import probe_until

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster, pytest.mark.on_postgres]

URL = "/api/v1/topics/orders/groups/mailer"


def _group(client: Client, url: str = URL) -> dict[str, Any]:
    """The group's JSON; the group must exist (see ``_registered``)."""
    response = client.get(url)
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def _row(group: dict[str, Any], queue: int) -> dict[str, Any]:
    """The group's row of ``queue`` on the page it sent."""
    (row,) = [q for q in group["queues"] if q["queue"] == queue]
    return dict(row)


def _registered(redis_client: redis.Redis) -> None:
    """Wait until the consumer has registered its group: before that the group's URL is a
    404, which the tests' first read must not race."""
    probe_until(lambda: groups_of(redis_client, "orders"), lambda groups: "mailer" in groups)


def test_it_answers_an_anonymous_visitor_with_401_json(client: Client) -> None:
    response = client.get(URL)

    assert response.status_code == 401
    assert response.json() == {"error": "authentication required"}


def test_it_answers_404_json_for_an_unknown_topic_or_group(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    create_topic(redis_client, "orders", 2)
    register_group(redis_client, "orders", "mailer")
    client.force_login(viewer)

    no_topic = client.get("/api/v1/topics/payments/groups/mailer")
    no_group = client.get("/api/v1/topics/orders/groups/auditor")

    assert no_topic.status_code == 404
    assert no_topic.json() == {"error": "no topic 'payments'"}
    assert no_group.status_code == 404
    assert no_group.json() == {"error": "no consumer group 'auditor' on topic 'orders'"}


def test_it_shows_each_queue_held_by_the_consumer_with_its_offsets(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 2)
    sent = produce(redis_url, "orders", [f"order-{i}" for i in range(10)])
    counts = per_queue(sent)
    client.force_login(viewer)

    with consuming(redis_url, "orders", "mailer", FailOn()) as consumer:
        _registered(redis_client)
        group = probe_until(
            lambda: _group(client),
            lambda g: (
                g["totals"]["lag"] == 0
                and all(c["assigned"] == [0, 1] for c in g["consumers"])
                # The states come from the consumer's last heartbeat, which may predate
                # the queues' first steps ("starting") or their being on its card at all
                # ("unknown").
                and all(q["state"] not in ("starting", "unknown") for q in g["queues"])
            ),
        )

    assert (group["topic"], group["group"], group["queue_count"]) == ("orders", "mailer", 2)
    assert group["ordering"] == "queue"
    # One page of the group's rows, by queue: both fit.
    assert [q["queue"] for q in group["queues"]] == [0, 1]
    assert (group["table"]["total"], group["table"]["pages"], group["table"]["sort"]) == (
        2,
        1,
        "queue",
    )
    assert [(c["id"], c["assigned"]) for c in group["consumers"]] == [
        (consumer.consumer_id, [0, 1])
    ]
    for q in group["queues"]:
        assert q["owner"] == consumer.consumer_id
        assert q["token"] >= 1
        assert q["lock_age_ms"] >= 0
        assert 0 < q["lock_expires_in_ms"] <= 60_000
        assert q["committed_offset"] == q["max_offset"] == counts[q["queue"]]
        assert (q["lag"], q["time_lag_s"], q["retries"], q["dead_letters"]) == (0, 0.0, 0, 0)
        assert q["state"] in {"idle", "consuming"}
    assert group["totals"] == {
        "lag": 0,
        "max_time_lag_s": 0.0,
        "owned": 2,
        "dead_letters": 0,
        "blocked_keys": 0,
        "parked_keys": 0,
        "parked_messages": 0,
        "stuck": 0,
    }
    assert group["blocked_keys"] == group["parked_keys"] == group["lanes"] == []


def test_it_lists_blocked_keys_and_lanes_under_key_ordering(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 2)
    poison, _, _ = produce(redis_url, "orders", ["order-poison", "order-poison", "order-ok"])
    client.force_login(viewer)
    handler = FailOn("order-poison", error="card declined")

    with consuming(
        redis_url,
        "orders",
        "mailer",
        handler,
        ordering=Ordering.KEY,
        lanes=4,
        retry_initial_ms=50,
        retry_max_ms=100,
    ) as consumer:
        probe_until(handler.count, lambda n: n == 1)
        ingest_until(redis_client, ev.LANES)
        group = probe_until(
            lambda: _group(client), lambda g: len(g["blocked_keys"]) == 1 and g["lanes"] != []
        )

    assert group["ordering"] == "key"
    (blocked,) = group["blocked_keys"]
    assert (blocked["queue"], blocked["key"], blocked["offset"], blocked["waiting"]) == (
        poison.queue,
        "order-poison",
        poison.offset,
        1,
    )
    assert blocked["retries"] >= 1
    assert "card declined" in blocked["error"]
    assert blocked["since_ms"] > 0
    row = _row(group, poison.queue)
    assert row["state"] == "blocked"
    assert row["committed_offset"] == poison.offset  # the low-water mark waits for it
    assert row["blocked_count"] == 1
    (lanes,) = group["lanes"]
    assert lanes["consumer"] == consumer.consumer_id
    assert lanes["lanes"] == 4
    assert len(lanes["per_lane"]) == 4
    assert group["totals"]["blocked_keys"] == 1


def test_it_lists_parked_keys_held_after_a_dead_letter(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 2)
    first, *rest = produce(redis_url, "orders", ["order-poison"] * 3)
    client.force_login(viewer)
    handler = FailOn("order-poison")

    with consuming(
        redis_url,
        "orders",
        "mailer",
        handler,
        ordering=Ordering.KEY,
        max_reconsume_times=1,
        after_dlq=AfterDlq.HOLD,
        retry_initial_ms=20,
        retry_max_ms=40,
    ):
        _registered(redis_client)
        # The view reads queue states, then held keys: wait until both reads have seen
        # the parking, not only the later one, and until the consumer's commit has
        # flushed the parked offsets as completed (parking is visible before the flush,
        # which runs on its own interval).
        group = probe_until(
            lambda: _group(client),
            lambda g: (
                g["totals"]["parked_messages"] == 2
                and _row(g, first.queue)["parked"] == 2
                and _all_handled_or_parked(_row(g, first.queue))
            ),
        )

    (parked,) = group["parked_keys"]
    assert {k: parked[k] for k in ("queue", "key", "state", "offset", "messages")} == {
        "queue": first.queue,
        "key": "order-poison",
        "state": "held",
        "offset": first.offset,
        "messages": 2,
    }
    assert parked["dlq_id"]
    row = _row(group, first.queue)
    assert (row["parked"], row["lag"], row["dead_letters"]) == (2, 2, 1)
    assert group["totals"]["dead_letters"] == 1
    assert [r.offset for r in rest] == [first.offset + 1, first.offset + 2]


def _all_handled_or_parked(row: dict[str, Any]) -> bool:
    """Every offset of the queue is committed or completed above the committed one."""
    return bool(row["committed_offset"] + row["completed_above"] >= row["max_offset"])
