"""A page that misses a queue update, or outlives the ingester that sent them, notices
the gap in ``seq`` and re-reads the JSON view; a page that reconnects starts again from a
seq-0 snapshot equal to the JSON view. The reference client implements the pages' rule;
what is asserted is what the server sent and where the client ended up."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.monitor.ingest import Ingester
from lockstep.workers import create_topic, keys
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group
from tests.dashboard.socket_helpers import (
    ReferencePage,
    communicator,
    drain,
    session_cookie,
    stable,
    write_events,
)

pytestmark = pytest.mark.django_db(transaction=True)

PATH = "/ws/queues/orders/2/"


def _json_view(user: User) -> dict[str, Any]:
    client = Client()
    client.force_login(user)
    body: dict[str, Any] = client.get("/api/v1/topics/orders/queues/2").json()
    return {k: body[k] for k in ("topic", "queue", "max_offset", "generated_at_ms", "groups")}


def _change_queue(client: redis.Redis, ingester: Ingester) -> None:
    """Something happens on queue 2 (a message produced, an event); the ingester pushes."""
    client.incr(keys.sequence(QueueRef("orders", 2)))
    write_events(client, "orders", 2, 3)
    while ingester.run_once(block_ms=0):
        pass
    ingester.push()


async def test_it_heals_a_lost_update_and_an_ingester_restart_from_the_json_view(
    viewer: User, redis_client: redis.Redis
) -> None:
    create_topic(redis_client, "orders", 4)
    register_group(redis_client, "orders", "mailer")
    page = ReferencePage(lambda: _json_view(viewer))
    socket = communicator(PATH, await session_cookie(viewer))
    assert (await socket.connect())[0]
    await sync_to_async(page.on_message)(await socket.receive_json_from(timeout=5))
    first = Ingester(redis_client)

    for _ in range(3):
        await sync_to_async(_change_queue)(redis_client, first)
    received = await drain(socket)
    for message in received[:2]:
        await sync_to_async(page.on_message)(message)
    lost = received[2]  # as if the channel layer had dropped it
    await sync_to_async(_change_queue)(redis_client, first)
    after_loss = await drain(socket)
    for message in after_loss:
        await sync_to_async(page.on_message)(message)
    resyncs_after_loss = page.resyncs

    second = Ingester(redis_client)  # a restarted ingester: its first push skips a number
    for _ in range(2):
        await sync_to_async(_change_queue)(redis_client, second)
    after_restart = await drain(socket)
    for message in after_restart:
        await sync_to_async(page.on_message)(message)
    view = await sync_to_async(_json_view)(viewer)
    await socket.disconnect()

    assert [m["seq"] for m in received] == [2, 3, 4]  # a fresh ingester's first skips 1
    assert lost["data"]["max_offset"] == 3
    assert [m["seq"] for m in after_loss] == [5]
    assert resyncs_after_loss == 1
    assert [m["seq"] for m in after_restart] == [7, 8]
    assert page.resyncs == 2
    assert page.data is not None
    assert stable(page.data) == stable(view)
    assert page.data["max_offset"] == 6


async def test_it_gives_a_reconnecting_page_a_fresh_snapshot_equal_to_the_json_view(
    viewer: User, redis_client: redis.Redis
) -> None:
    create_topic(redis_client, "orders", 4)
    register_group(redis_client, "orders", "mailer")
    ingester = Ingester(redis_client)
    cookie = await session_cookie(viewer)
    socket = communicator(PATH, cookie)
    assert (await socket.connect())[0]
    await socket.receive_json_from(timeout=5)
    await sync_to_async(_change_queue)(redis_client, ingester)
    before = await drain(socket)
    await socket.disconnect()
    await sync_to_async(_change_queue)(redis_client, ingester)  # missed while away

    again = communicator(PATH, cookie)
    assert (await again.connect())[0]
    snapshot = await again.receive_json_from(timeout=5)
    view = await sync_to_async(_json_view)(viewer)
    await again.disconnect()

    assert [m["seq"] for m in before] == [2]
    assert snapshot["seq"] == 0
    assert stable(snapshot["data"]) == stable(view)
    assert snapshot["data"]["max_offset"] == 2
    assert len(snapshot["events"]) == 6
