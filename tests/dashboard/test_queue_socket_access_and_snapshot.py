"""/ws/queues/<topic>/<queue>/: who may connect, what an unknown queue gets, and the
snapshot on connect (seq 0), which must be the queue's JSON view."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.monitor.ingest import Ingester
from lockstep.workers import create_topic
from tests.dashboard.helpers import produce, running_consumer
from tests.dashboard.socket_helpers import communicator, session_cookie, stable, write_events
from tests.support import probe_until

pytestmark = pytest.mark.django_db(transaction=True)


def _json_view(user: User, topic: str, queue: int) -> dict[str, Any]:
    client = Client()
    client.force_login(user)
    response = client.get(f"/api/v1/topics/{topic}/queues/{queue}")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def _ingest_all(client: redis.Redis) -> None:
    ingester = Ingester(client)
    while ingester.run_once(block_ms=0):
        pass


async def test_it_rejects_an_anonymous_visitor(redis_client: redis.Redis) -> None:
    create_topic(redis_client, "orders", 4)
    socket = communicator("/ws/queues/orders/1/")

    connected, code = await socket.connect()

    assert (connected, code) == (False, 4401)
    await socket.disconnect()


@pytest.mark.parametrize("path", ["/ws/queues/nosuch/0/", "/ws/queues/orders/4/"])
async def test_it_closes_with_4404_for_an_unknown_topic_or_queue(
    path: str, viewer: User, redis_client: redis.Redis
) -> None:
    create_topic(redis_client, "orders", 4)
    socket = communicator(path, await session_cookie(viewer))

    connected, code = await socket.connect()

    assert (connected, code) == (False, 4404)
    await socket.disconnect()


async def test_it_sends_the_queue_as_its_json_view_shows_it_on_connect(
    viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 4)
    first = await sync_to_async(produce)(redis_url, "orders", ["order-7"] * 5)
    queue = first[0].queue
    with running_consumer(redis_url, "orders", "mailer") as (_, recorder):
        await sync_to_async(probe_until)(recorder.count, lambda n: n == 5)
    await sync_to_async(produce)(redis_url, "orders", ["order-7"] * 3)  # 3 behind
    ids = write_events(redis_client, "orders", queue, 60)
    await sync_to_async(_ingest_all)(redis_client)
    socket = communicator(f"/ws/queues/orders/{queue}/", await session_cookie(viewer))

    connected, _ = await socket.connect()
    assert connected
    message = await socket.receive_json_from(timeout=5)
    view = await sync_to_async(_json_view)(viewer, "orders", queue)
    await socket.disconnect()

    assert (message["type"], message["seq"]) == ("queue", 0)
    assert stable(message["data"]) == stable({k: view[k] for k in message["data"]})
    (group,) = message["data"]["groups"]
    assert (group["group"], group["committed_offset"], group["lag"]) == ("mailer", 5, 3)
    assert group["time_lag_s"] > 0
    assert [e["id"] for e in message["events"]] == [e["id"] for e in view["events"]]
    assert [e["id"] for e in message["events"]] == ids[::-1][:50], "latest 50, newest first"
    assert message["events"][0]["details"] == {"offsets": [59], "error": "boom 59"}
