"""/ws/overview/ through the real ASGI stack (origin check, session auth, Redis channel
layer): who may connect, the snapshot on connect, and the ingester's numbered updates."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.asgi import application
from lockstep.dashboard.monitor.ingest import Ingester
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.workers import create_topic
from lockstep.workers.topics import register_group
from tests.dashboard.helpers import per_queue, produce

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://127.0.0.1")


def _communicator(cookie: str = "") -> WebsocketCommunicator:
    headers = [ORIGIN]
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    return WebsocketCommunicator(application, "/ws/overview/", headers=headers)


@sync_to_async
def _session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def _max_offsets(message: dict[str, Any]) -> dict[int, int]:
    (topic,) = message["data"]["topics"]
    return {q["queue"]: q["max_offset"] for q in topic["queues"]}


def _lags(message: dict[str, Any], group: str) -> dict[int, int]:
    (topic,) = message["data"]["topics"]
    return {
        q["queue"]: g["lag"] for q in topic["queues"] for g in q["groups"] if g["group"] == group
    }


async def test_it_rejects_an_anonymous_visitor() -> None:
    communicator = _communicator()

    connected, code = await communicator.connect()

    assert connected is False
    assert code == 4401
    await communicator.disconnect()


async def test_it_rejects_a_forged_session_cookie() -> None:
    communicator = _communicator("sessionid=not-a-real-session")

    connected, code = await communicator.connect()

    assert connected is False
    assert code == 4401
    await communicator.disconnect()


async def test_it_sends_a_logged_in_user_the_snapshot_on_connect(
    viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 4)
    sent = await sync_to_async(produce)(redis_url, "orders", ["a", "b", "c", "d", "e"])
    communicator = _communicator(await _session_cookie(viewer))

    connected, _ = await communicator.connect()
    assert connected is True
    message = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()

    assert message["type"] == "overview"
    assert message["seq"] == 0
    expected = per_queue(sent)
    assert _max_offsets(message) == {q: expected[q] for q in range(4)}


async def test_it_forwards_each_ingester_push_with_the_next_seq_and_new_numbers(
    viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 4)
    register_group(redis_client, "orders", "mailer")
    communicator = _communicator(await _session_cookie(viewer))
    connected, _ = await communicator.connect()
    assert connected is True
    snapshot = await communicator.receive_json_from(timeout=5)
    ingester = Ingester(get_redis())

    sent = await sync_to_async(produce)(redis_url, "orders", [f"k{i}" for i in range(12)])
    await sync_to_async(ingester.push)()
    first = await communicator.receive_json_from(timeout=5)
    more = await sync_to_async(produce)(redis_url, "orders", ["k0", "k1", "k2"])
    await sync_to_async(ingester.push)()
    second = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()

    assert _lags(snapshot, "mailer") == {0: 0, 1: 0, 2: 0, 3: 0}
    # A fresh ingester's first push skips a number (receivers re-read: it cannot know what
    # a predecessor left unsent); after that each push is the next.
    assert (first["type"], first["seq"]) == ("overview", 2)
    assert (second["type"], second["seq"]) == ("overview", 3)
    after_first = per_queue(sent)
    after_second = per_queue(sent + more)
    assert _lags(first, "mailer") == {q: after_first[q] for q in range(4)}
    assert _max_offsets(second) == {q: after_second[q] for q in range(4)}
    assert second["data"]["generated_at_ms"] >= first["data"]["generated_at_ms"]


async def test_it_sends_each_update_to_every_connected_viewer(
    viewer: User, redis_client: redis.Redis
) -> None:
    create_topic(redis_client, "orders", 2)
    cookie = await _session_cookie(viewer)
    pages = [_communicator(cookie), _communicator(cookie)]
    for page in pages:
        assert (await page.connect())[0] is True
        await page.receive_json_from(timeout=5)

    await sync_to_async(Ingester(get_redis()).push)()

    updates = [await page.receive_json_from(timeout=5) for page in pages]
    for page in pages:
        await page.disconnect()
    assert [u["seq"] for u in updates] == [2, 2]
    assert updates[0]["data"] == updates[1]["data"]
