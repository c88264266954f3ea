"""/ws/dead-letters/requests/<request_id>/ through the real ASGI stack (origin check,
session auth, Redis channel layer): the snapshot on connect (seq 0), then seq-numbered
progress while the request runs; anonymous visitors and unknown requests are closed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.asgi import application
from lockstep.dashboard.deadletters import actions, tasks
from lockstep.dashboard.deadletters.plans import Selection
from lockstep.dashboard.deadletters.sync import sync_all
from tests.dashboard.deadletters.action_helpers import GROUP, celery_broker, fill, queued_tasks

# Transactional: the consumer reads from another thread. (The flush after each such test
# removes the role groups; tests/conftest.py makes them again.)
pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://127.0.0.1")
REQUEST_ID = "socket-test-1"


@pytest.fixture(autouse=True)
def rate(settings: Any) -> None:
    # 12 messages in about 0.6 s: a few pushes while it runs (one per 0.25 s at most).
    settings.LOCKSTEP_REPLAY_RATE_PER_S = 20


@pytest.fixture
def broker(redis_url: str) -> Iterator[None]:
    with celery_broker(redis_url):
        yield


def _communicator(path: str, cookie: str = "") -> WebsocketCommunicator:
    headers = [ORIGIN]
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    return WebsocketCommunicator(application, path, headers=headers)


@sync_to_async
def _session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


@sync_to_async
def _queued_request(client: redis.Redis) -> str:
    """A replay of 12 dead letters, queued for Celery (not run)."""
    fill(client, keys_count=3, per_key=4)
    sync_all(client)
    selection = Selection.of_filter({})
    actions.submit("operator", GROUP, "replay", REQUEST_ID, selection)
    return REQUEST_ID


async def _all_messages(communicator: WebsocketCommunicator) -> list[dict[str, Any]]:
    received = []
    while not await communicator.receive_nothing(timeout=0.5):
        received.append(await communicator.receive_json_from())
    return received


async def test_it_sends_the_snapshot_then_numbered_progress_until_done(
    viewer: User, redis_client: redis.Redis, broker: None
) -> None:
    request_id = await _queued_request(redis_client)
    queued = queued_tasks(redis_client)
    communicator = _communicator(
        f"/ws/dead-letters/requests/{request_id}/", await _session_cookie(viewer)
    )

    connected, _ = await communicator.connect()
    snapshot = await communicator.receive_json_from()
    # The worker's part, done here: deliver the queued task.
    state = await sync_to_async(tasks.run_action, thread_sensitive=False)(request_id)
    updates = await _all_messages(communicator)
    await communicator.disconnect()

    assert [(t["task"], t["argsrepr"]) for t in queued] == [
        ("lockstep.dashboard.deadletters.tasks.run_action", "('socket-test-1',)")
    ]
    assert connected
    assert (snapshot["type"], snapshot["seq"], snapshot["state"]) == ("progress", 0, "pending")
    assert (snapshot["total"], snapshot["done"], snapshot["outcomes"]) == (12, 0, {"pending": 12})
    assert snapshot["status_url"] == f"/api/v1/dead-letter-requests/{request_id}"
    assert state == "done"
    assert [u["seq"] for u in updates] == list(range(1, len(updates) + 1))
    assert len(updates) >= 3, updates
    assert {u["type"] for u in updates} == {"progress"}
    assert updates[0]["state"] == "running"
    assert any(0 < u["done"] < 12 for u in updates), [u["done"] for u in updates]
    assert [u["done"] for u in updates] == sorted(u["done"] for u in updates)
    assert (updates[-1]["state"], updates[-1]["done"]) == ("done", 12)
    assert updates[-1]["outcomes"] == {"republished": 12}
    assert updates[-1]["finished_at"] is not None


async def test_it_pushes_a_cancel_of_a_queued_request(
    viewer: User, redis_client: redis.Redis, broker: None
) -> None:
    request_id = await _queued_request(redis_client)
    communicator = _communicator(
        f"/ws/dead-letters/requests/{request_id}/", await _session_cookie(viewer)
    )
    await communicator.connect()
    await communicator.receive_json_from()

    await sync_to_async(actions.cancel)(request_id, "operator")
    delivered_later = await sync_to_async(tasks.run_action)(request_id)
    updates = await _all_messages(communicator)
    await communicator.disconnect()

    assert delivered_later == "cancelled"
    assert updates[-1]["state"] == "cancelled"
    assert updates[-1]["outcomes"] == {"skipped": 12}
    assert [u["seq"] for u in updates] == list(range(1, len(updates) + 1))


async def test_it_rejects_an_anonymous_visitor(redis_client: redis.Redis, broker: None) -> None:
    request_id = await _queued_request(redis_client)
    communicator = _communicator(f"/ws/dead-letters/requests/{request_id}/")

    connected, code = await communicator.connect()

    assert (connected, code) == (False, 4401)
    await communicator.disconnect()


@pytest.mark.parametrize(
    "path",
    [
        "/ws/dead-letters/requests/no-such-request/",
        "/ws/dead-letters/requests/<script>/",
        "/ws/dead-letters/elsewhere/",
    ],
)
async def test_it_closes_unknown_requests_and_paths_with_4404(viewer: User, path: str) -> None:
    communicator = _communicator(path, await _session_cookie(viewer))

    connected, code = await communicator.connect()

    assert (connected, code) == (False, 4404)
    await communicator.disconnect()
