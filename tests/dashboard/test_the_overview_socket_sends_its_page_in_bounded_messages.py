"""/ws/overview/ carries what its page shows — the summary, the worst queues, the page of
rows on screen — whole on connect and then as changes, never in a message over 64 KiB,
at a few thousand (topic, group, queue) pairs with long names."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from lockstep.dashboard.monitor.live import Publisher
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.workers.refs import QueueRef
from tests.dashboard.fleets import make_fleet, set_max_offset
from tests.dashboard.socket_helpers import communicator, session_cookie

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.on_postgres]

LIMIT = 64 * 1024
# Names near the 128-character limit: a page of 100 rows of them is over 64 KiB as one
# message.
TOPIC = "t" * 100
GROUPS = ["g" * 110 + str(i) for i in range(4)]


async def _messages_until_order(socket: WebsocketCommunicator) -> list[str]:
    """Raw messages up to and including the first that carries ``order``."""
    raw = []
    while True:
        text = await socket.receive_from(timeout=30)
        raw.append(text)
        if "order" in json.loads(text):
            return raw


def _view(raw: list[str]) -> dict[str, Any]:
    view: dict[str, Any] = {"rows": {}}
    for text in raw:
        message = json.loads(text)
        for row in message.get("rows", []):
            view["rows"][row["id"]] = row
        view.update({k: v for k, v in message.items() if k != "rows"})
    return view


@pytest.fixture
def big_fleet(redis_client: redis.Redis) -> int:
    # A few queues behind, the rest caught up: the stuck rule asks the stored samples of
    # each queue first seen behind, and a thousand of them would only slow the test.
    return make_fleet(
        redis_client, [TOPIC], 1024, GROUPS, lambda _t, q: q % 17 if q % 64 == 0 else 0
    )


async def test_it_sends_a_page_of_a_hundred_long_rows_in_messages_under_64_kib(
    viewer: User, big_fleet: int
) -> None:
    socket = communicator(
        "/ws/overview/?per_page=100&sort=lag&order=desc", await session_cookie(viewer)
    )
    connected, _ = await socket.connect(timeout=60)
    assert connected

    raw = await _messages_until_order(socket)
    await socket.disconnect()

    view = _view(raw)
    assert big_fleet == 4096
    assert max(len(text.encode()) for text in raw) <= LIMIT
    assert len(raw) >= 2  # one message would not have fitted
    assert [json.loads(t)["seq"] for t in raw] == list(range(len(raw)))
    assert len(view["order"]) == 100
    assert set(view["order"]) == set(view["rows"])
    assert view["table"]["total"] == 4096
    lags = [view["rows"][rid]["lag"] for rid in view["order"]]
    assert lags == sorted(lags, reverse=True) and lags[0] == 16


async def test_it_sends_only_the_rows_that_changed_after_a_push(
    viewer: User, big_fleet: int, redis_client: redis.Redis
) -> None:
    publisher = Publisher(get_redis())
    await sync_to_async(publisher.push)()  # the writer is live: pages read its state
    socket = communicator(
        f"/ws/overview/?topic={TOPIC}&group={GROUPS[0]}&per_page=20",
        await session_cookie(viewer),
    )
    connected, _ = await socket.connect(timeout=60)
    assert connected
    await _messages_until_order(socket)

    set_max_offset(redis_client, QueueRef(TOPIC, 3), 500)
    await sync_to_async(publisher.writer.sweep)()
    await sync_to_async(publisher.push)()
    change = json.loads(await socket.receive_from(timeout=30))
    await socket.disconnect()
    await sync_to_async(publisher.stop)()

    assert [(r["queue"], r["max_offset"], r["lag"]) for r in change["rows"]] == [(3, 500, 500)]
    assert "order" not in change  # queue 3 keeps its place on a page sorted by queue
    assert change["summary"]["totals"]["lag"] > 0


async def test_a_query_the_page_cannot_show_closes_the_socket_with_4400(viewer: User) -> None:
    socket = communicator("/ws/overview/?sort=colour", await session_cookie(viewer))

    connected, code = await socket.connect()

    assert (connected, code) == (False, 4400)
    await socket.disconnect()
