"""GET /api/v1/topics/<topic>/queues/<queue> (and its page): live state, the chart's
history, the lock-ownership timeline, rebalances, retried messages and recent events."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.monitor.tasks import sample_lag
from lockstep.workers import create_topic
from lockstep.workers import events as ev
from tests.dashboard.helpers import produce
from tests.dashboard.scenarios import FailOn, consuming, ingest_until
from tests.support import probe_until

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster, pytest.mark.on_postgres]

URL = "/api/v1/topics/orders/queues/0"


def _queue(client: Client, url: str = URL) -> dict[str, Any]:
    response = client.get(url)
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def _committed(client: Client) -> int:
    return int(_queue(client)["groups"][0]["committed_offset"])


def test_it_answers_an_anonymous_visitor_with_401_json(client: Client) -> None:
    assert client.get(URL).status_code == 401


@pytest.mark.parametrize(
    ("url", "status", "error"),
    [
        ("/api/v1/topics/payments/queues/0", 404, "no topic 'payments'"),
        ("/api/v1/topics/orders/queues/2", 404, "topic 'orders' has no queue 2 (0..1)"),
        ("/api/v1/topics/orders/queues/one", 400, "queue must be a whole number, got 'one'"),
        ("/api/v1/topics/orders/queues/-1", 400, "queue must be >= 0, got -1"),
        (URL + "?minutes=0", 400, "minutes must be 1..1440, got 0"),
        (URL + "?minutes=soon", 400, "minutes must be a whole number, got 'soon'"),
    ],
)
def test_it_answers_unknown_queues_and_bad_parameters_in_json(
    client: Client, viewer: User, redis_client: redis.Redis, url: str, status: int, error: str
) -> None:
    create_topic(redis_client, "orders", 2)
    client.force_login(viewer)

    response = client.get(url)

    assert response.status_code == status
    assert response.json() == {"error": error}


def test_it_charts_lag_samples_and_commits(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 1)
    client.force_login(viewer)
    with consuming(redis_url, "orders", "mailer", FailOn()):
        produce(redis_url, "orders", ["order-1"] * 4)
        probe_until(lambda: _committed(client), lambda c: c == 4)
        produce(redis_url, "orders", ["order-1"] * 3)
        probe_until(lambda: _committed(client), lambda c: c == 7)
    produce(redis_url, "orders", ["order-1"] * 2)  # nobody consumes these: lag 2
    assert sample_lag() == 1
    ingest_until(redis_client, ev.LAG_SAMPLED)

    data = _queue(client)

    assert (data["topic"], data["queue"], data["max_offset"], data["minutes"]) == (
        "orders",
        0,
        9,
        15,
    )
    assert data["since_ms"] == data["generated_at_ms"] - 15 * 60_000
    points = data["series"]["mailer"]
    assert [p[0] for p in points] == sorted(p[0] for p in points)
    commits = [p[2] for p in points if p[1] is None]
    assert commits[-1] == 7 and commits == sorted(commits)
    assert points[-1][1:] == [9, 7, 2]  # the lag sample: max offset, committed, lag


def test_it_draws_lock_ownership_per_consumer_and_the_rebalances(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 1)
    client.force_login(viewer)
    with consuming(redis_url, "orders", "mailer", FailOn(), consumer_id="first"):
        probe_until(_owners(client), lambda o: o == ["first"])
    with consuming(redis_url, "orders", "mailer", FailOn(), consumer_id="second"):
        probe_until(_owners(client), lambda o: o == ["second"])
        ingest_until(redis_client, ev.LOCK_ACQUIRED, minimum=2)
        ingest_until(redis_client, ev.REBALANCE, minimum=2)
        data = _queue(client)

    first, second = data["timeline"]
    assert {k: first[k] for k in ("group", "consumer", "token", "end_reason", "live")} == {
        "group": "mailer",
        "consumer": "first",
        "token": 1,
        "end_reason": "released",
        "live": False,
    }
    assert first["start_ms"] <= first["end_ms"] <= second["start_ms"]
    assert {k: second[k] for k in ("group", "consumer", "token", "end_ms", "live")} == {
        "group": "mailer",
        "consumer": "second",
        "token": 2,
        "end_ms": None,
        "live": True,
    }
    assert [(r["consumer"], r["change"]) for r in data["rebalances"]] == [
        ("first", "assigned"),
        ("second", "assigned"),
    ]


def test_it_shows_the_message_being_retried_with_its_error(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 1)
    client.force_login(viewer)
    _, poison, _ = produce(redis_url, "orders", ["order-1", "order-poison", "order-2"])

    with consuming(
        redis_url, "orders", "mailer", FailOn("order-poison", error="card declined"), suspend_ms=20
    ):
        data = probe_until(lambda: _queue(client), lambda d: d["problems"] != [])
        ingest_until(redis_client, ev.CONSUME_FAILED)
        events = _queue(client)["events"]

    (problem,) = data["problems"]
    assert {k: problem[k] for k in ("group", "kind", "key", "offset")} == {
        "group": "mailer",
        "kind": "retrying",
        "key": "order-poison",
        "offset": poison.offset,
    }
    assert problem["retries"] >= 1
    assert "card declined" in problem["error"]
    (group,) = data["groups"]
    assert group["committed_offset"] == poison.offset
    assert group["lag"] == 2
    types = {e["type"] for e in events}
    assert {ev.LOCK_ACQUIRED, ev.OFFSET_COMMITTED, ev.CONSUME_FAILED} <= types
    assert not types & {ev.LAG_SAMPLED, ev.KEY_STATE, ev.LANES}
    assert [e["ts_ms"] for e in events] == sorted((e["ts_ms"] for e in events), reverse=True)


def _owners(client: Client) -> Callable[[], list[str]]:
    """The queue's lock owner per group (none before the group has subscribed)."""
    return lambda: [g["owner"] for g in _queue(client)["groups"]]
