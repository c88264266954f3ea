"""/ws/events/, the live feed's hint socket: on connect, how far events are stored; then,
at most once per push, the last stored stream ID when new events were stored."""

from __future__ import annotations

import pytest
import redis
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from lockstep.dashboard.monitor.ingest import Ingester
from tests.dashboard.socket_helpers import communicator, drain, session_cookie, write_events

pytestmark = pytest.mark.django_db(transaction=True)


def _ingest_and_push(ingester: Ingester) -> None:
    while ingester.run_once(block_ms=0):
        pass
    ingester.push()


async def test_it_rejects_an_anonymous_visitor() -> None:
    socket = communicator("/ws/events/")

    assert await socket.connect() == (False, 4401)
    await socket.disconnect()


async def test_it_hints_the_last_stored_id_once_per_push_with_news(
    viewer: User, redis_client: redis.Redis
) -> None:
    ingester = Ingester(redis_client)
    socket = communicator("/ws/events/", await session_cookie(viewer))
    assert (await socket.connect())[0]
    on_connect = await socket.receive_json_from(timeout=5)

    first = write_events(redis_client, "orders", 0, 120)
    await sync_to_async(_ingest_and_push)(ingester)
    await sync_to_async(_ingest_and_push)(ingester)  # nothing new: no hint
    second = write_events(redis_client, "payments", 1, 3)
    await sync_to_async(_ingest_and_push)(ingester)
    hints = await drain(socket)
    await socket.disconnect()

    reconnected = communicator("/ws/events/", await session_cookie(viewer))
    assert (await reconnected.connect())[0]
    again = await reconnected.receive_json_from(timeout=5)
    await reconnected.disconnect()

    assert on_connect == {"type": "events", "seq": 0, "last_id": "0-0"}
    assert hints == [  # numbered as every push (a fresh ingester's first skips 1)
        {"type": "events", "seq": 2, "last_id": first[-1]},
        {"type": "events", "seq": 3, "last_id": second[-1]},
    ]
    assert again == {"type": "events", "seq": 0, "last_id": second[-1]}
