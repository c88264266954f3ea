"""/ws/alerts/ through the real ASGI stack (origin check, session auth, the Redis channel
layer on the suite's Redis): anonymous visitors are refused, a signed-in user gets the
counts on connect and every ``push.publish`` after."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from lockstep.dashboard.alerts import push
from lockstep.dashboard.alerts.models import Alert
from lockstep.dashboard.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://127.0.0.1")


@pytest.fixture
def viewer(django_user_model: type[User]) -> User:
    """Any signed-in user (the badge is on every page); a transactional test's database
    has no role groups, and the socket needs none."""
    return django_user_model.objects.create_user("viewer", password="viewer-password-1")


def _communicator(cookie: str = "") -> WebsocketCommunicator:
    headers = [ORIGIN]
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    return WebsocketCommunicator(application, "/ws/alerts/", headers=headers)


@sync_to_async
def _session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


@sync_to_async
def _alert(n: int, state: str = "open") -> Alert:
    return Alert.objects.create(
        rule="queue_stuck",
        fingerprint=f"fp-{n}",
        state=state,
        summary=f"queue {n} is stuck",
        since=timezone.now(),
    )


async def test_it_refuses_an_anonymous_visitor_with_4401() -> None:
    communicator = _communicator()

    connected, code = await communicator.connect()

    assert (connected, code) == (False, 4401)
    await communicator.disconnect()


async def test_it_sends_the_counts_on_connect(viewer: User) -> None:
    await _alert(1)
    await _alert(2)
    await _alert(3, state="acknowledged")
    await _alert(4, state="resolved")
    communicator = _communicator(await _session_cookie(viewer))

    connected, _ = await communicator.connect()
    assert connected is True
    message = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()

    assert message == {
        "type": "alerts.update",
        "seq": 0,
        "counts": {"open": 2, "acknowledged": 1},
        "opened": [],
        "resolved": [],
    }


async def test_it_forwards_each_publish_to_every_signed_in_page(viewer: User) -> None:
    cookie = await _session_cookie(viewer)
    pages = [_communicator(cookie), _communicator(cookie)]
    for page in pages:
        assert (await page.connect())[0] is True
        assert (await page.receive_json_from(timeout=5))["counts"]["open"] == 0
    opened = await _alert(7)

    assert await sync_to_async(push.publish)(opened=[opened]) is True

    updates = [await page.receive_json_from(timeout=5) for page in pages]
    for page in pages:
        await page.disconnect()
    for update in updates:
        assert update["type"] == "alerts.update"
        assert update["counts"] == {"open": 1, "acknowledged": 0}
        assert [(a["id"], a["summary"], a["url"]) for a in update["opened"]] == [
            (opened.pk, "queue 7 is stuck", f"/alerts/{opened.pk}")
        ]
