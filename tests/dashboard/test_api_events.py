"""GET /api/v1/events (and the feed page): filters, paging forward with ``after``, and
answers to bad parameters."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from lockstep.dashboard.web.store.models import Event
from lockstep.workers import create_topic
from lockstep.workers import events as ev
from tests.dashboard.scenarios import FailOn, consuming, ingest_all, ingest_until, write_event

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]


def _feed(client: Client, query: str = "") -> dict[str, Any]:
    response = client.get(f"/api/v1/events{query}")
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def _history(r: redis.Redis) -> None:
    """Eight events, 1 s apart: two topics, two groups, three types, two keys."""
    rows = [
        (ev.LOCK_ACQUIRED, "orders", "mailer", 0, ""),
        (ev.OFFSET_COMMITTED, "orders", "mailer", 0, ""),
        (ev.CONSUME_FAILED, "orders", "mailer", 1, "order-7"),
        (ev.LOCK_ACQUIRED, "orders", "audit", 1, ""),
        (ev.CONSUME_FAILED, "orders", "mailer", 1, "order-7"),
        (ev.DEAD_LETTERED, "orders", "mailer", 1, "order-7"),
        (ev.LOCK_ACQUIRED, "payments", "mailer", 0, ""),
        (ev.CONSUME_FAILED, "orders", "audit", 0, "order-8"),
    ]
    for i, (type_, topic, group, queue, key) in enumerate(rows):
        write_event(
            r,
            type_,
            1_795_000_000_000 + i * 1000,
            topic=topic,
            group=group,
            queue=queue,
            key=key,
            details={"n": i},
        )
    ingest_all(r)


def _ns(feed: dict[str, Any]) -> list[int]:
    return [e["details"]["n"] for e in feed["events"]]


def test_it_answers_an_anonymous_visitor_with_401_json(client: Client) -> None:
    assert client.get("/api/v1/events").status_code == 401
    assert client.get("/events")["Location"] == "/login/?next=/events"


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("?queue=first", "queue must be a whole number, got 'first'"),
        ("?limit=0", "limit must be 1..500, got 0"),
        ("?limit=501", "limit must be 1..500, got 501"),
        (
            "?after=yesterday",
            "after must be an event stream ID like 1795257513451-0, got 'yesterday'",
        ),
        ("?type=Lock%20Acquired!", "type 'LockAcquired!' is not an event type name"),
    ],
)
def test_it_answers_bad_parameters_with_400_json(
    client: Client, viewer: User, query: str, error: str
) -> None:
    client.force_login(viewer)

    response = client.get(f"/api/v1/events{query}")

    assert response.status_code == 400
    assert response.json() == {"error": error}


def test_it_filters_by_topic_group_queue_type_and_key(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    _history(redis_client)
    client.force_login(viewer)

    assert _ns(_feed(client)) == [0, 1, 2, 3, 4, 5, 6, 7]
    assert _ns(_feed(client, "?topic=payments")) == [6]
    assert _ns(_feed(client, "?topic=orders&group=audit")) == [3, 7]
    assert _ns(_feed(client, "?queue=1")) == [2, 3, 4, 5]
    assert _ns(_feed(client, "?type=lock_acquired")) == [0, 3, 6]
    assert _ns(_feed(client, "?type=consume_failed,dead_lettered&key=order-7")) == [2, 4, 5]
    assert _ns(_feed(client, "?type=lock_lost")) == []
    one = _feed(client, "?type=dead_lettered")["events"][0]
    assert {k: one[k] for k in ("type", "topic", "group", "queue", "key", "ts_ms")} == {
        "type": "dead_lettered",
        "topic": "orders",
        "group": "mailer",
        "queue": 1,
        "key": "order-7",
        "ts_ms": 1_795_000_005_000,
    }


def test_it_pages_forward_after_an_event_without_skipping_any(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    _history(redis_client)
    client.force_login(viewer)

    newest = _feed(client, "?limit=3")
    assert (_ns(newest), newest["has_more"]) == ([5, 6, 7], True)
    first = _feed(client, "?type=consume_failed&limit=1")  # the newest failure
    start = _feed(client, "?limit=8")["events"][1]["id"]  # after event 1
    page1 = _feed(client, f"?after={start}&limit=3")
    page2 = _feed(client, f"?after={page1['last_id']}&limit=3")
    page3 = _feed(client, f"?after={page2['last_id']}&limit=3")

    assert _ns(first) == [7]
    assert (_ns(page1), page1["has_more"], page1["cursor_found"]) == ([2, 3, 4], True, True)
    assert (_ns(page2), page2["has_more"]) == ([5, 6, 7], False)
    assert (_ns(page3), page3["last_id"], page3["has_more"]) == ([], page2["last_id"], False)


def test_it_restarts_from_the_newest_when_the_cursor_is_not_stored(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    _history(redis_client)
    client.force_login(viewer)

    feed = _feed(client, "?after=1-0&limit=2")

    assert (_ns(feed), feed["cursor_found"]) == ([6, 7], False)


def test_it_shows_the_runtimes_lock_events_on_the_page(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 2)
    client.force_login(viewer)
    with consuming(redis_url, "orders", "mailer", FailOn(), consumer_id="c-1"):
        ingest_until(redis_client, ev.LOCK_ACQUIRED, minimum=2)

    feed = _feed(client, "?type=lock_acquired")
    page = client.get("/events?type=lock_acquired").content.decode()

    assert [(e["consumer"], e["queue"], e["token"]) for e in feed["events"]] == [
        ("c-1", 0, 1),
        ("c-1", 1, 1),
    ]
    assert page.count('class="event-row"') == 2
    assert 'data-type="lock_acquired"' in page
    assert f'data-last-id="{feed["last_id"]}"' in page


def test_it_pages_on_after_an_event_the_ingester_made_up(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    _history(redis_client)
    lost = Event.objects.create(
        stream_id="lost:1795000009000-0", type="events_lost", ts=timezone.now(), details={"lost": 3}
    )
    write_event(redis_client, ev.LOCK_LOST, 1_795_000_010_000, topic="orders", details={"n": 8})
    ingest_all(redis_client)
    client.force_login(viewer)

    feed = _feed(client, f"?after={lost.stream_id}")

    assert (_ns(feed), feed["cursor_found"]) == ([8], True)
