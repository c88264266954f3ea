"""A live socket outlives a Redis stall: with the channel layer's Redis stopped
(SIGSTOP) for longer than channels_redis's blocking pop (5 s) and redis-py's default read
timeout (also 5 s), an idle ``/ws/alerts/`` and ``/ws/overview/`` stay open, get pushes
again afterwards, and the web process logs no traceback. When Redis goes away for good,
the server closes each socket with 4503 and one warning line, no traceback, and a fresh
socket works once Redis is back (the pages reconnect by themselves: live_socket.js,
badge.js)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Iterator

import pytest

from bench.dashboard import login
from bench.ws_client import ConnectionClosed, HandshakeError, WebSocket
from lockstep.dashboard.web.push_socket import REDIS_UNAVAILABLE
from tests.dashboard.stack import PASSWORD, USER, Site, running_site
from tests.support import RestartableRedis

pytestmark = pytest.mark.slow

# Longer than BZPOPMIN's 5 s plus redis-py 8's 5 s read timeout could ever cover.
STALL_S = 7.0
SOCKETS = ("/ws/alerts/", "/ws/overview/")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Site, RestartableRedis]]:
    tmp = tmp_path_factory.mktemp("stall")
    server = RestartableRedis(tmp / "redis-data")
    (tmp / "redis-data").mkdir()
    server.start()
    try:
        with running_site(server.url, tmp, {"orders": 4}) as site:
            yield site, server
    finally:
        if server.proc is not None and server.proc.poll() is None:
            os.kill(server.proc.pid, signal.SIGCONT)
        server.stop()


async def _open(site: Site, path: str, cookie: str) -> WebSocket:
    socket = await WebSocket.connect(
        f"ws://127.0.0.1:{site.port}{path}", headers={"Cookie": cookie, "Origin": site.url}
    )
    json.loads(await socket.recv_text())  # the snapshot sent on connect
    return socket


async def _closed_within(socket: WebSocket, seconds: float) -> int | None:
    """The close code if the server closes ``socket`` within ``seconds``, else None
    (messages received meanwhile are pushes: they prove it open)."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            await asyncio.wait_for(socket.recv_text(), left)
        except TimeoutError:
            return None
        except ConnectionClosed as closed:
            return closed.code or -1
        except (ConnectionError, asyncio.IncompleteReadError):
            return -1  # dropped without a close frame
    return None


def _traceback_free(log: str) -> bool:
    return "Traceback" not in log and "Exception inside application" not in log


def test_it_keeps_idle_sockets_open_across_a_seven_second_stall(
    stack: tuple[Site, RestartableRedis],
) -> None:
    site, server = stack
    assert server.proc is not None
    redis_pid = server.proc.pid
    cookie = login(site.url, USER, PASSWORD)

    async def scenario() -> list[int | None]:
        sockets = [await _open(site, path, cookie) for path in SOCKETS]
        os.kill(redis_pid, signal.SIGSTOP)
        try:
            await asyncio.sleep(STALL_S)
        finally:
            os.kill(redis_pid, signal.SIGCONT)
        # Once Redis answers again, the blocking pops return and the sockets carry on.
        codes = await asyncio.gather(*(_closed_within(s, 8.0) for s in sockets))
        for s in sockets:
            await s.close()
        return list(codes)

    codes = asyncio.run(scenario())
    assert codes == [None] * len(SOCKETS), site.log("web")[-3000:]
    assert _traceback_free(site.log("web")), site.log("web")[-3000:]


def test_it_closes_sockets_with_4503_and_one_line_when_redis_goes_away(
    stack: tuple[Site, RestartableRedis],
) -> None:
    site, server = stack
    cookie = login(site.url, USER, PASSWORD)
    before = len(site.log("web"))

    async def cut() -> list[int | None]:
        sockets = [await _open(site, path, cookie) for path in SOCKETS]
        server.stop()
        return list(await asyncio.gather(*(_closed_within(s, 20.0) for s in sockets)))

    codes = asyncio.run(cut())
    server.start()

    async def reopen() -> bool:
        """Like a page: retry until a socket opens (the first may meet a stale connection
        of the web process and be refused with 4503)."""
        for _ in range(5):
            try:
                socket = await _open(site, "/ws/alerts/", cookie)
            except (HandshakeError, ConnectionError, asyncio.IncompleteReadError):
                await asyncio.sleep(0.5)
                continue
            await socket.close()
            return True
        return False

    assert asyncio.run(reopen())
    log = site.log("web")[before:]
    assert codes == [REDIS_UNAVAILABLE] * len(SOCKETS), log[-3000:]
    assert _traceback_free(log), log[-3000:]
    warnings = [line for line in log.splitlines() if "channel layer's Redis" in line]
    assert len(warnings) >= len(SOCKETS), log[-3000:]
