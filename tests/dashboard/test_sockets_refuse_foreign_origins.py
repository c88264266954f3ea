"""A WebSocket handshake is accepted only from an origin in ALLOWED_HOSTS, even with a
valid session cookie: a page on another site cannot open the dashboard's sockets with the
operator's cookie (cross-site WebSocket hijacking)."""

from __future__ import annotations

import pytest
import redis
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from lockstep.dashboard.asgi import application
from tests.dashboard.socket_helpers import session_cookie

pytestmark = pytest.mark.django_db(transaction=True)

PATHS = ["/ws/overview/", "/ws/alerts/", "/ws/events/"]


async def _handshake(path: str, origin: bytes | None, cookie: str) -> bool:
    headers = [(b"cookie", cookie.encode())]
    if origin is not None:
        headers.append((b"origin", origin))
    socket = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await socket.connect(timeout=5)
    await socket.disconnect()
    return bool(connected)


async def _signed_in_cookie() -> str:
    user = await sync_to_async(User.objects.create_user)("olga", password="pw-123456789")
    return await session_cookie(user)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    "origin",
    [b"https://evil.example", b"http://127.0.0.1.evil.example", b"null", None],
)
async def test_it_refuses_a_handshake_from_a_foreign_or_missing_origin(
    redis_client: redis.Redis, path: str, origin: bytes | None
) -> None:
    assert not await _handshake(path, origin, await _signed_in_cookie())


@pytest.mark.parametrize("path", PATHS)
async def test_it_accepts_the_same_session_from_the_dashboards_own_origin(
    redis_client: redis.Redis, path: str
) -> None:
    assert await _handshake(path, b"http://127.0.0.1:8000", await _signed_in_cookie())
