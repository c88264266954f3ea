"""GET /api/v1/groups/<group>/dead-letters: filters, sorts, keyset cursor pagination and
the count still waiting; 401 / 404 / 400 JSON, never a 500."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.deadletters.models import DeadLetter, Status
from lockstep.dashboard.deadletters.sync import sync_all
from tests.dashboard.deadletters.helpers import T0_MS, add_dead_letter, make_group

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]

URL = "/api/v1/groups/billing/dead-letters"


def _get(client: Client, query: str = "", status: int = 200) -> dict[str, Any]:
    response = client.get(f"{URL}?{query}")
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body: dict[str, Any] = response.json()
    return body


def _fill(client: redis.Redis, count: int) -> list[str]:
    """``count`` dead letters, one second apart, over 4 queues and 5 keys; every third
    error is a timeout."""
    make_group(client)
    ids = [
        add_dead_letter(
            client,
            queue=i % 4,
            offset=i,
            key=f"order-{i % 5}",
            error="TimeoutError: bank" if i % 3 == 0 else "ValueError: amount",
            dead_at_ms=T0_MS + i * 1000,
        )
        for i in range(count)
    ]
    sync_all(client)
    return ids


def _walk(client: Client, query: str, limit: int) -> list[list[int]]:
    pages: list[list[int]] = []
    cursor = ""
    while True:
        body = _get(client, f"{query}&limit={limit}&cursor={cursor}")
        pages.append([item["offset"] for item in body["items"]])
        if body["next_cursor"] is None:
            return pages
        cursor = body["next_cursor"]


def test_it_answers_an_anonymous_visitor_with_401_json(client: Client) -> None:
    assert client.get(URL).status_code == 401
    assert client.get(f"{URL}/1").status_code == 401
    assert client.get(f"{URL.replace('dead-letters', 'dead-letters.jsonl')}").status_code == 401


def test_it_pages_through_every_dead_letter_newest_first_without_repeats(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    _fill(redis_client, 23)
    client.force_login(viewer)

    pages = _walk(client, "", 10)

    assert [len(p) for p in pages] == [10, 10, 3]
    assert [o for p in pages for o in p] == list(range(22, -1, -1))


def test_it_pages_oldest_first_when_asked(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    _fill(redis_client, 12)
    client.force_login(viewer)

    pages = _walk(client, "sort=dead_at", 5)

    assert [o for p in pages for o in p] == list(range(12))


def test_it_breaks_ties_in_time_by_id_across_pages(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    for i in range(7):
        add_dead_letter(redis_client, offset=i, dead_at_ms=T0_MS)
    sync_all(redis_client)
    client.force_login(viewer)

    pages = _walk(client, "", 3)

    assert sorted(o for p in pages for o in p) == list(range(7))


def test_it_lists_items_with_the_fields_the_cli_and_pages_use(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    (dlq_id,) = _fill(redis_client, 1)
    client.force_login(viewer)

    body = _get(client)

    record = DeadLetter.objects.get()
    assert body["items"] == [
        {
            "id": record.pk,
            "dlq_id": dlq_id,
            "topic": "orders",
            "group": "billing",
            "queue": 0,
            "offset": 0,
            "key": "order-0",
            "status": "dead",
            "reconsume_times": 3,
            "error": "TimeoutError: bank",
            "dead_lettered_at": "2026-11-21T10:30:00+00:00",
            "dead_at_ms": T0_MS,
            "produced_at_ms": T0_MS - 5000,
            "body_size": 16,
            "ordering": "key",
            "after_dlq": "hold",
            "replay_of": "",
        }
    ]
    assert body["next_cursor"] is None
    assert body["count_waiting"] == 1
    assert (body["sort"], body["limit"]) == ("-dead_at", 50)


@pytest.mark.parametrize(
    ("query", "offsets"),
    [
        ("queue=1", [17, 13, 9, 5, 1]),
        ("topic=orders&queue=1", [17, 13, 9, 5, 1]),
        ("topic=payments", []),
        ("key=order-2", [17, 12, 7, 2]),
        ("error=timeout", [18, 15, 12, 9, 6, 3, 0]),
        ("error=TIMEOUT&key=order-0", [15, 0]),
        (f"since={T0_MS + 15_000}", [19, 18, 17, 16, 15]),
        (f"until={T0_MS + 2_000}", [2, 1, 0]),
        ("since=2026-11-21T10:30:17Z&until=2026-11-21T10:30:18", [18, 17]),
        ("since=2026-11-21T11:30:17%2B01:00&until=2026-11-21T10:30:17", [17]),
        ("status=discarded", [4]),
        ("status=dead,discarded&queue=0", [16, 12, 8, 4, 0]),
    ],
)
def test_it_filters_by_every_field(
    client: Client, viewer: User, redis_client: redis.Redis, query: str, offsets: list[int]
) -> None:
    _fill(redis_client, 20)
    DeadLetter.objects.get(offset=4).move_to(Status.DISCARDED)
    client.force_login(viewer)

    assert [i["offset"] for i in _get(client, query)["items"]] == offsets


def test_it_counts_what_still_waits_whatever_the_status_filter(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    _fill(redis_client, 10)
    DeadLetter.objects.get(offset=4).move_to(Status.DISCARDED)
    DeadLetter.objects.get(offset=8).move_to(Status.REPLAYED)
    client.force_login(viewer)

    assert _get(client)["count_waiting"] == 8
    assert _get(client, "status=discarded")["count_waiting"] == 8
    assert _get(client, "queue=0")["count_waiting"] == 1  # 0, 4 (discarded), 8 (replayed)


def test_it_keeps_listing_a_group_that_is_gone_from_redis(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    _fill(redis_client, 3)
    redis_client.flushall()
    client.force_login(viewer)

    assert len(_get(client)["items"]) == 3


@pytest.mark.parametrize(
    ("query", "status", "error"),
    [
        ("cursor=bm9wZQ", 400, "cursor is not one this list gave"),
        ("cursor=%%%", 400, "cursor is not one this list gave"),
        ("cursor=" + "A" * 300, 400, "cursor is not one this list gave"),
        ("since=yesterday", 400, "since must be epoch milliseconds or an ISO 8601 time"),
        ("until=99999999999999999999", 400, "until must be epoch milliseconds"),
        ("since=2026-11-22&until=2026-11-21", 400, "since must not be after until"),
        ("status=lost", 400, "unknown status 'lost'"),
        ("sort=key", 400, "sort must be one of -dead_at, dead_at"),
        ("limit=0", 400, "limit must be 1..500"),
        ("limit=many", 400, "limit must be a whole number"),
        ("queue=-1", 400, "queue must be 0..1023"),
    ],
)
def test_it_answers_bad_parameters_with_400_json(
    client: Client,
    viewer: User,
    redis_client: redis.Redis,
    query: str,
    status: int,
    error: str,
) -> None:
    _fill(redis_client, 1)
    client.force_login(viewer)

    assert error in _get(client, query, status)["error"]


def test_it_refuses_a_cursor_made_for_the_other_sort(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    _fill(redis_client, 3)
    client.force_login(viewer)
    cursor = _get(client, "limit=1")["next_cursor"]

    body = _get(client, f"sort=dead_at&cursor={cursor}", 400)

    assert body["error"] == "cursor was made for sort -dead_at, not dead_at"


def test_it_answers_an_unknown_group_with_404_json(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    client.force_login(viewer)

    response = client.get("/api/v1/groups/<script>alert(1)<%5Cscript>/dead-letters")

    assert response.status_code == 404
    assert response.json() == {"error": "no consumer group '<script>alert(1)<\\\\script>'"}
    assert response["Content-Type"] == "application/json"


def test_it_returns_script_in_keys_and_errors_as_plain_json_data(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    add_dead_letter(redis_client, key="<script>k</script>", error="<script>e</script>")
    sync_all(redis_client)
    client.force_login(viewer)

    response = client.get(f"{URL}?key=<script>k</script>")

    (item,) = response.json()["items"]
    assert (item["key"], item["error"]) == ("<script>k</script>", "<script>e</script>")
    assert response["Content-Type"] == "application/json"
    assert response["X-Content-Type-Options"] == "nosniff"
