"""/ws/overview/ through the real ASGI stack (origin check, session auth, Redis channel
layer): who may connect, the page's view on connect, and after each ingester push the
parts that changed, numbered by the socket; a page applying them ends with what the JSON
view says."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.asgi import application
from lockstep.dashboard.monitor.ingest import Ingester
from lockstep.dashboard.monitor.live import SWEEP_SECONDS, Publisher
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.workers import create_topic
from lockstep.workers.topics import register_group
from tests.dashboard.helpers import get_json, per_queue, produce, row_id
from tests.support import probe_until

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://127.0.0.1")


def _communicator(cookie: str = "", query: str = "") -> WebsocketCommunicator:
    headers = [ORIGIN]
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    path = "/ws/overview/" + (f"?{query}" if query else "")
    return WebsocketCommunicator(application, path, headers=headers)


@sync_to_async
def _session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


@sync_to_async
def _json_view(user: User, query: str = "") -> dict[str, Any]:
    client = Client()
    client.force_login(user)
    return get_json(client, "/api/v1/overview" + (f"?{query}" if query else ""))


class _Page:
    """What the page's script keeps of the socket's messages (overview.js): the last of
    each part, rows by id, and the ids of the table's page in order."""

    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.parts: dict[str, Any] = {}
        self.rows: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []

    def apply(self, message: dict[str, Any]) -> None:
        assert message["type"] == "overview"
        self.seqs.append(message["seq"])
        for part in ("summary", "worst", "table"):
            if part in message:
                self.parts[part] = message[part]
        for row in message.get("rows", []):
            self.rows[row["id"]] = row
        if "order" in message:
            self.order = message["order"]
            self.rows = {rid: self.rows[rid] for rid in self.order}

    def table(self) -> list[dict[str, Any]]:
        return [self.rows[rid] for rid in self.order]

    def column(self, name: str, group: str = "mailer") -> dict[int, Any]:
        return {r["queue"]: r[name] for r in self.table() if r["group"] == group}


def _same_rows(page: _Page, view: dict[str, Any]) -> None:
    """The page's table is the JSON view's page of rows, cut to the socket's fields."""
    rows = view["table"]["rows"]
    assert page.order == [row_id(r["topic"], r["group"], r["queue"]) for r in rows]
    for shown, row in zip(page.table(), rows, strict=True):
        assert shown == {"id": shown["id"], **{k: row[k] for k in shown if k != "id"}}


def _same_as_the_json_view(page: _Page, view: dict[str, Any]) -> None:
    """The page's table and parts are the JSON view's. (Read while a fleet writer is live:
    without one the JSON view reads the fleet again, and time lags and rates move.)"""
    _same_rows(page, view)
    assert page.parts["summary"] == view["summary"]
    assert page.parts["table"] == {k: v for k, v in view["table"].items() if k != "rows"}
    assert [(r["topic"], r["group"], r["queue"], r["stuck"]) for r in page.parts["worst"]] == [
        (r["topic"], r["group"], r["queue"], r["stuck"]) for r in view["worst"]
    ]


async def test_it_rejects_an_anonymous_visitor() -> None:
    communicator = _communicator()

    connected, code = await communicator.connect()

    assert connected is False
    assert code == 4401
    await communicator.disconnect()


async def test_it_rejects_a_forged_session_cookie() -> None:
    communicator = _communicator("sessionid=not-a-real-session")

    connected, code = await communicator.connect()

    assert connected is False
    assert code == 4401
    await communicator.disconnect()


@pytest.mark.parametrize("query", ["sort=nosuch", "per_page=0", "per_page=101", "state=odd"])
async def test_it_closes_a_socket_asking_for_a_view_it_cannot_show_with_4400(
    query: str, viewer: User, redis_client: redis.Redis
) -> None:
    create_topic(redis_client, "orders", 2)
    communicator = _communicator(await _session_cookie(viewer), query)

    connected, code = await communicator.connect()

    assert (connected, code) == (False, 4400)
    await communicator.disconnect()


async def test_it_sends_a_logged_in_user_the_view_on_connect(
    viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 4)
    register_group(redis_client, "orders", "mailer")
    sent = await sync_to_async(produce)(redis_url, "orders", ["a", "b", "c", "d", "e"])
    communicator = _communicator(await _session_cookie(viewer))

    connected, _ = await communicator.connect()
    assert connected is True
    message = await communicator.receive_json_from(timeout=5)
    assert await communicator.receive_nothing(timeout=0.2), "a small view is one message"
    await communicator.disconnect()

    assert (message["type"], message["seq"]) == ("overview", 0)
    assert {"generated_at_ms", "summary", "worst", "table", "rows", "order"} <= set(message)
    page = _Page()
    page.apply(message)
    expected = per_queue(sent)
    assert page.column("max_offset") == {q: expected[q] for q in range(4)}
    assert page.column("lag") == {q: expected[q] for q in range(4)}
    assert page.order == [row_id("orders", "mailer", q) for q in range(4)]
    assert [t["name"] for t in message["summary"]["topics"]] == ["orders"]
    assert message["table"]["total"] == 4


async def test_it_sends_the_page_of_the_table_its_query_asks_for(
    viewer: User, redis_client: redis.Redis
) -> None:
    create_topic(redis_client, "orders", 4)
    register_group(redis_client, "orders", "mailer")
    query = "sort=queue&order=desc&per_page=3&page=2"
    communicator = _communicator(await _session_cookie(viewer), query)

    connected, _ = await communicator.connect()
    assert connected is True
    message = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()

    page = _Page()
    page.apply(message)
    assert page.order == [row_id("orders", "mailer", 0)]
    table = message["table"]
    assert (table["page"], table["pages"], table["per_page"], table["total"]) == (2, 2, 3, 4)
    assert (table["sort"], table["order"]) == ("queue", "desc")
    _same_rows(page, await _json_view(viewer, query))


async def test_it_sends_what_changed_after_each_ingester_push_with_the_next_seq(
    viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 4)
    register_group(redis_client, "orders", "mailer")
    communicator = _communicator(await _session_cookie(viewer))
    connected, _ = await communicator.connect()
    assert connected is True
    page = _Page()
    page.apply(await communicator.receive_json_from(timeout=5))
    ingester = Ingester(get_redis())

    sent = await sync_to_async(produce)(redis_url, "orders", [f"k{i}" for i in range(12)])
    await sync_to_async(ingester.push)()
    first = await communicator.receive_json_from(timeout=5)
    page.apply(first)
    lags_after_first = page.column("lag")
    # Production names no queue in an event: the next push shows it by its sweep.
    publisher = ingester.publisher
    assert isinstance(publisher, Publisher)  # in the test's thread, not on one of its own
    await sync_to_async(probe_until)(
        lambda: publisher.writer.sweep_due(SWEEP_SECONDS), bool, timeout=30
    )
    more = await sync_to_async(produce)(redis_url, "orders", ["k0", "k1", "k2"])
    await sync_to_async(ingester.push)()
    second = await communicator.receive_json_from(timeout=5)
    page.apply(second)
    await sync_to_async(ingester.push)()
    third = await communicator.receive_json_from(timeout=5)
    page.apply(third)
    view = await _json_view(viewer)
    await communicator.disconnect()

    assert page.seqs == [0, 1, 2, 3]
    after_first = per_queue(sent)
    after_second = per_queue(sent + more)
    # Only the rows that changed: the queues the first batch landed on.
    assert sorted(r["queue"] for r in first["rows"]) == sorted(after_first)
    assert "order" not in first, "the page's rows are the same four"
    assert lags_after_first == {q: after_first[q] for q in range(4)}
    assert page.column("max_offset") == {q: after_second[q] for q in range(4)}
    assert page.column("lag") == {q: after_second[q] for q in range(4)}
    assert second["generated_at_ms"] >= first["generated_at_ms"]
    _same_as_the_json_view(page, view)


async def test_it_sends_each_update_to_every_connected_viewer(
    viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 2)
    register_group(redis_client, "orders", "mailer")
    cookie = await _session_cookie(viewer)
    pages = [_communicator(cookie), _communicator(cookie)]
    for page in pages:
        assert (await page.connect())[0] is True
        await page.receive_json_from(timeout=5)
    sent = await sync_to_async(produce)(redis_url, "orders", ["a", "b", "c"])

    await sync_to_async(Ingester(get_redis()).push)()

    updates = [await page.receive_json_from(timeout=5) for page in pages]
    for page in pages:
        await page.disconnect()
    assert [u["seq"] for u in updates] == [1, 1]
    assert updates[0] == updates[1]
    assert sorted(r["queue"] for r in updates[0]["rows"]) == sorted(per_queue(sent))
