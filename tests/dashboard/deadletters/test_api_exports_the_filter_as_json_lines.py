"""GET /api/v1/groups/<group>/dead-letters.jsonl: every record matching the list's
filters, one JSON object per line, with the exact body (base64)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.deadletters.sync import sync_all
from tests.dashboard.deadletters.helpers import T0_MS, add_dead_letter, make_group

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]

URL = "/api/v1/groups/billing/dead-letters.jsonl"


def _lines(client: Client, query: str = "") -> list[dict[str, Any]]:
    response = client.get(f"{URL}?{query}")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="dead-letters-billing.jsonl"'
    text = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    assert text.endswith("\n") or text == ""
    return [json.loads(line) for line in text.splitlines()]


def test_it_streams_every_matching_dead_letter_with_its_exact_body(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    for i in range(1200):  # more than one page of the export's reads
        add_dead_letter(
            redis_client,
            queue=i % 2,
            offset=i,
            body=bytes([i % 256, 0xFF]),
            dead_at_ms=T0_MS + i,
        )
    sync_all(redis_client)
    client.force_login(viewer)

    lines = _lines(client, "queue=1&sort=dead_at")

    assert [line["offset"] for line in lines] == list(range(1, 1200, 2))
    assert base64.b64decode(lines[0]["body"]["base64"]) == b"\x01\xff"
    assert lines[0]["body"]["text"] is None
    assert lines[0]["headers"] == {}
    assert {"id", "dlq_id", "status", "error", "dead_lettered_at", "attempts"} <= set(lines[0])


def test_it_exports_nothing_for_a_filter_that_matches_nothing(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    add_dead_letter(redis_client)
    sync_all(redis_client)
    client.force_login(viewer)

    assert _lines(client, "key=nobody") == []


def test_it_leaves_bodies_out_for_viewers_when_configured(
    client: Client, viewer: User, redis_client: redis.Redis, settings: Any
) -> None:
    settings.LOCKSTEP_HIDE_BODIES_FROM_VIEWERS = True
    make_group(redis_client)
    add_dead_letter(redis_client, headers={"card": "4111"})
    sync_all(redis_client)
    client.force_login(viewer)

    (line,) = _lines(client)

    assert (line["body"], line["headers"], line["body_hidden"]) == (None, None, True)


def test_it_exports_headers_with_broken_unicode_as_valid_json(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    add_dead_letter(redis_client, headers={"note": "\ud800 half a character", "é": "ü"})
    sync_all(redis_client)
    client.force_login(viewer)

    (line,) = _lines(client)

    assert line["headers"] == {"note": "\ud800 half a character", "é": "ü"}


@pytest.mark.parametrize(
    ("path", "status", "error"),
    [
        (f"{URL}?status=nope", 400, "unknown status 'nope'"),
        (f"{URL}?since=soon", 400, "since must be epoch milliseconds or an ISO 8601 time"),
        ("/api/v1/groups/ghosts/dead-letters.jsonl", 404, "no consumer group 'ghosts'"),
    ],
)
def test_it_refuses_bad_filters_before_streaming(
    client: Client, viewer: User, redis_client: redis.Redis, path: str, status: int, error: str
) -> None:
    make_group(redis_client)
    client.force_login(viewer)

    response = client.get(path)

    assert response.status_code == status
    assert error in response.json()["error"]


@pytest.mark.django_db(transaction=True)
async def test_it_streams_page_by_page_under_asgi(redis_client: redis.Redis) -> None:
    from asgiref.sync import sync_to_async
    from django.contrib.auth.models import User as UserModel
    from django.test import AsyncClient

    def prepare() -> User:
        make_group(redis_client)
        for i in range(700):
            add_dead_letter(redis_client, offset=i, dead_at_ms=T0_MS + i)
        sync_all(redis_client)
        return UserModel.objects.create_user("asgi-viewer", password="pw-123456789")

    user = await sync_to_async(prepare)()
    client = AsyncClient()
    await client.aforce_login(user)

    response = await client.get(URL)
    chunks = [chunk async for chunk in response.streaming_content]  # type: ignore[attr-defined]

    assert response.status_code == 200
    assert len(chunks) == 2  # one chunk per page of 500 records read
    lines = b"".join(chunks).decode().splitlines()
    assert [json.loads(line)["offset"] for line in lines] == list(range(699, -1, -1))
