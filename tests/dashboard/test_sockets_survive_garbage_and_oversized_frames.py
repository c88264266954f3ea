"""Every socket route takes abuse without an error: garbage text and binary frames and
"subscriptions" to things that do not exist are dropped (the pages send nothing), a frame
above 64 KiB closes the socket with 4009 (an application may not use 1009), and paths to
unknown topics, queues and requests are closed with 4404. Through the ASGI application
(an exception in a consumer fails the test) and through a real daphne, which drops a
connection sending a 2 MB frame itself (above its 1 MiB limit) and still sends a fresh
connection its snapshot afterwards, with no traceback logged."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from bench.dashboard import login
from bench.ws_client import ConnectionClosed, WebSocket
from lockstep.dashboard.deadletters.models import ActionRequest
from lockstep.dashboard.web.push_socket import MAX_CLIENT_MESSAGE_BYTES
from lockstep.workers import create_topic
from tests.dashboard.socket_helpers import communicator, session_cookie
from tests.dashboard.stack import PASSWORD, USER, Site, running_site

pytestmark = pytest.mark.django_db(transaction=True)

REQUEST_ID = "garbage-request-1"
SOCKETS = [
    "/ws/overview/",
    "/ws/queues/orders/0/",
    "/ws/events/",
    "/ws/alerts/",
    f"/ws/dead-letters/requests/{REQUEST_ID}/",
]
GARBAGE_TEXT = [
    "not json",
    "{",
    "",
    "null",
    "\x00\x01\x02",
    "<script>alert(1)</script>",
    '{"type": "subscribe", "topic": "nosuch", "queue": 99}',
    '{"subscribe": "/ws/queues/nosuch/0/", "request_id": "nosuch"}',
    "[" * 10_000,  # nesting deep enough to break a recursive decoder
    "x" * MAX_CLIENT_MESSAGE_BYTES,  # the largest frame a socket keeps
]
GARBAGE_BYTES = [b"", b"\xff\xfe\x00", b"{}", bytes(range(256)) * 4]
TOO_BIG = 2 * 1024 * 1024
UNKNOWN = [
    "/ws/queues/nosuch/0/",
    "/ws/queues/orders/4/",
    "/ws/queues/orders/99999999999999999999999/",
    "/ws/queues/orders/-1/",
    "/ws/queues/orders/%00/",
    "/ws/dead-letters/requests/nosuch-request/",
    "/ws/dead-letters/requests/<script>/",
    "/ws/overview/extra/",
    "/ws/" + "x" * 5000 + "/",
]


@pytest.fixture
def world(redis_client: redis.Redis) -> None:
    create_topic(redis_client, "orders", 4)
    ActionRequest.objects.create(
        request_id=REQUEST_ID, action="replay", actor="ops", group="billing"
    )


async def _open(path: str, cookie: str) -> WebsocketCommunicator:
    socket = communicator(path, cookie)
    connected, code = await socket.connect(timeout=5)
    assert connected, f"{path} refused with {code}"
    snapshot = await socket.receive_json_from(timeout=5)
    assert isinstance(snapshot, dict) and snapshot
    return socket


# ---- through the ASGI application -------------------------------------------------------


@pytest.mark.parametrize("path", SOCKETS)
async def test_it_drops_garbage_frames_and_keeps_the_socket_open(
    path: str, world: None, viewer: User
) -> None:
    socket = await _open(path, await session_cookie(viewer))

    # As the server hands frames on (send_to refuses empty ones, which a client may send).
    for text in GARBAGE_TEXT:
        await socket.send_input({"type": "websocket.receive", "text": text})
    for data in GARBAGE_BYTES:
        await socket.send_input({"type": "websocket.receive", "bytes": data})

    assert await socket.receive_nothing(timeout=0.3)
    assert not socket.future.done(), "the consumer stopped"
    await socket.disconnect()  # re-raises what the consumer raised, if anything


@pytest.mark.parametrize("path", SOCKETS)
@pytest.mark.parametrize("kind", ["text", "bytes"])
async def test_it_closes_a_socket_sent_an_oversized_frame_with_4009(
    path: str, kind: str, world: None, viewer: User
) -> None:
    socket = await _open(path, await session_cookie(viewer))

    if kind == "text":
        await socket.send_to(text_data="x" * TOO_BIG)
    else:
        await socket.send_to(bytes_data=b"\xff" * TOO_BIG)

    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4009}
    await socket.disconnect()


@pytest.mark.parametrize("path", UNKNOWN)
async def test_it_closes_sockets_to_things_that_do_not_exist_with_4404(
    path: str, world: None, viewer: User
) -> None:
    socket = communicator(path, await session_cookie(viewer))

    connected, code = await socket.connect(timeout=5)

    assert (connected, code) == (False, 4404)
    await socket.disconnect()


# ---- through a real daphne ---------------------------------------------------------------


@pytest.fixture
def site(redis_url: str, tmp_path: Path) -> Iterator[Site]:
    """Per test, not per module: pytest runs this module's daphne test first (grouped by
    the session's ``redis_url`` parameter), and a site alive after it would push its
    ingester's queue updates to the in-process sockets of the tests above."""
    with running_site(redis_url, tmp_path, {"orders": 4}) as site:
        yield site


async def _connect(site: Site, cookie: str, path: str) -> tuple[WebSocket, dict[str, Any]]:
    headers = {"Cookie": cookie, "Origin": site.url}
    socket = await WebSocket.connect(f"ws://127.0.0.1:{site.port}{path}", headers)
    snapshot = json.loads(await asyncio.wait_for(socket.recv_text(), 10))
    return socket, snapshot


async def _close_code(socket: WebSocket) -> int | None:
    """The code the server closes with (messages before it are skipped)."""
    try:
        while True:
            await asyncio.wait_for(socket.recv_text(), 10)
    except ConnectionClosed as closed:
        return closed.code
    except (asyncio.IncompleteReadError, ConnectionError):
        return None  # the connection dropped without a close frame


async def _send_ignoring_a_reset(send: Any) -> None:
    """Daphne may close while a huge frame is still being written: that is its answer."""
    with contextlib.suppress(ConnectionError):
        await send


async def _abuse_then_connect(site: Site, cookie: str) -> dict[str, Any]:
    for path in ("/ws/overview/", "/ws/queues/orders/0/", "/ws/events/", "/ws/alerts/"):
        # Garbage is dropped: the socket then still closes on an oversized frame with the
        # consumer's own 4009 (a consumer that had failed would have been closed with 1011).
        socket, _ = await _connect(site, cookie, path)
        for text in GARBAGE_TEXT[:-1]:
            await socket.send_text(text)
        for data in GARBAGE_BYTES:
            await socket.send_binary(data)
        await socket.send_text("x" * (MAX_CLIENT_MESSAGE_BYTES + 1))
        assert await _close_code(socket) == 4009, path
        await socket.close()

        # Beyond daphne's own limit (1 MiB by default) daphne drops the connection at once
        # (autobahn fails it "by drop": no close frame, a browser reports 1006).
        socket, _ = await _connect(site, cookie, path)
        await _send_ignoring_a_reset(socket.send_binary(b"\x00" * TOO_BIG))
        assert await _close_code(socket) is None, path
        await socket.close()

    socket, snapshot = await _connect(site, cookie, "/ws/overview/")
    await socket.close()
    return snapshot


@pytest.mark.slow  # a daphne process and a migrated site: seconds
def test_a_real_daphne_survives_the_abuse_and_still_sends_snapshots(site: Site) -> None:
    cookie = login(site.url, USER, PASSWORD)

    snapshot = asyncio.run(_abuse_then_connect(site, cookie))

    assert snapshot["type"] == "overview" and snapshot["seq"] == 0
    assert [t["name"] for t in snapshot["summary"]["topics"]] == ["orders"]
    assert site.procs["web"].poll() is None
    log = site.log("web")
    assert "Traceback" not in log and "Exception inside application" not in log
