"""A WebSocket to a path no page uses (``/ws/foo/``, a queue that is not a number) is
closed with 4404, or 4401 when anonymous: never an error from the server."""

from __future__ import annotations

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://127.0.0.1")
PATHS = ["/ws/foo/", "/ws/queues/orders/abc/", "/ws/", "/elsewhere"]


def _session_cookie(user: User) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def _close_code(path: str, cookie: bytes = b"") -> int:
    headers = [ORIGIN] + ([(b"cookie", cookie)] if cookie else [])
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect(timeout=5)
    await communicator.disconnect()
    assert not connected
    return int(code)


@pytest.mark.parametrize("path", PATHS)
async def test_an_anonymous_socket_to_an_unknown_path_is_closed_with_4401(path: str) -> None:
    assert await _close_code(path) == 4401


@pytest.mark.parametrize("path", PATHS)
async def test_a_signed_in_socket_to_an_unknown_path_is_closed_with_4404(path: str) -> None:
    from asgiref.sync import sync_to_async

    user = await sync_to_async(User.objects.create_user)("olga", password="pw-123456789")
    cookie = await sync_to_async(_session_cookie)(user)
    assert await _close_code(path, cookie) == 4404
