"""Queue sockets get coalesced, numbered updates: a burst of events on a queue becomes a
few messages (one per push interval at most), numbered 1, 2, 3… per queue, each with the
queue's state read at push time and its newest events; a queue nothing happened to gets
nothing. The channel layer never sees one message per event."""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.monitor.ingest import Ingester
from lockstep.dashboard.monitor.live import RECENT_EVENTS, queue_group
from lockstep.dashboard.web.store.models import Event
from lockstep.workers import create_topic, keys
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group
from tests.dashboard.socket_helpers import (
    communicator,
    drain,
    session_cookie,
    stable,
    write_events,
)

pytestmark = pytest.mark.django_db(transaction=True)

PUSH_INTERVAL = 0.2
BURST_SECONDS = 2.0


def _run(ingester: Ingester, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ingester.run_once(block_ms=20)
        ingester.maybe_push()


def _burst(client: redis.Redis, queue: int, written: list[str]) -> None:
    """About 650 events on one queue over BURST_SECONDS (25 every 75 ms)."""
    deadline = time.monotonic() + BURST_SECONDS - 0.3
    while time.monotonic() < deadline:
        written += write_events(client, "orders", queue, 25)
        time.sleep(0.075)


def _queue_json(user: User, queue: int) -> dict[str, Any]:
    client = Client()
    client.force_login(user)
    body: dict[str, Any] = client.get(f"/api/v1/topics/orders/queues/{queue}").json()
    return body


async def test_it_turns_a_burst_of_events_into_a_few_numbered_updates(
    viewer: User, redis_client: redis.Redis
) -> None:
    create_topic(redis_client, "orders", 4)
    register_group(redis_client, "orders", "mailer")
    ingester = Ingester(redis_client, push_interval=PUSH_INTERVAL)
    await sync_to_async(ingester.push)()  # the first push covers every queue once
    cookie = await session_cookie(viewer)
    busy, quiet = (
        communicator("/ws/queues/orders/1/", cookie),
        communicator("/ws/queues/orders/2/", cookie),
    )
    for socket in (busy, quiet):
        assert (await socket.connect())[0]
        assert (await socket.receive_json_from(timeout=5))["seq"] == 0
    written: list[str] = []
    writer = threading.Thread(target=_burst, args=(redis_client, 1, written))

    writer.start()
    await sync_to_async(_run)(ingester, BURST_SECONDS + 0.5)
    writer.join()
    updates = await drain(busy)
    nothing = await drain(quiet)
    view = await sync_to_async(_queue_json)(viewer, 1)
    for socket in (busy, quiet):
        await socket.disconnect()

    assert len(written) > 400
    assert 3 <= len(updates) <= (BURST_SECONDS + 0.5) / PUSH_INTERVAL + 1, len(updates)
    # Nobody watched the queue at the first push (before the sockets opened), so it sent
    # the queue nothing: its updates are numbered from 1 (docs/events.md §5, watchers).
    assert [u["seq"] for u in updates] == list(range(1, 1 + len(updates)))
    assert all(u["type"] == "queue" for u in updates)
    assert nothing == [], "a queue nothing happened to gets no update"
    stored = set(
        await sync_to_async(lambda: set(Event.objects.values_list("stream_id", flat=True)))()
    )
    for update in updates:
        ids = [e["id"] for e in update["events"]]
        assert 0 < len(ids) <= RECENT_EVENTS
        assert set(ids) <= stored
        assert ids == sorted(ids, key=written.index, reverse=True), "newest first"
    assert updates[-1]["events"][0]["id"] == written[-1]
    seen = [e["id"] for u in updates for e in u["events"]]
    assert len(seen) == len(set(seen)), "each event in one update only"
    assert stable(updates[-1]["data"]) == stable({k: view[k] for k in updates[-1]["data"]})


async def test_it_numbers_each_queue_on_its_own_and_pushes_state_changes_without_events(
    viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 4)
    register_group(redis_client, "orders", "mailer")
    ingester = Ingester(redis_client, push_interval=PUSH_INTERVAL)
    await sync_to_async(ingester.push)()
    cookie = await session_cookie(viewer)
    sockets = {q: communicator(f"/ws/queues/orders/{q}/", cookie) for q in (0, 3)}
    for socket in sockets.values():
        assert (await socket.connect())[0]
        await socket.receive_json_from(timeout=5)

    for round_ in range(3):
        write_events(redis_client, "orders", 0, 5)
        if round_ == 1:  # queue 3 moves without any event: a message was produced to it
            redis_client.incr(keys.sequence(QueueRef("orders", 3)))
        await sync_to_async(ingester.run_once)(0)
        await sync_to_async(ingester.push)()
    got = {q: await drain(s) for q, s in sockets.items()}
    for socket in sockets.values():
        await socket.disconnect()

    # Each queue counts on its own, from 1: nobody watched them at the first push.
    assert [m["seq"] for m in got[0]] == [1, 2, 3]
    assert [m["seq"] for m in got[3]] == [1]
    assert got[3][0]["data"]["max_offset"] == 1
    assert got[3][0]["events"] == []
    assert [len(m["events"]) for m in got[0]] == [5, 5, 5]


@pytest.mark.parametrize("topic", ["retail%eu", "t" * 128], ids=["percent", "longest"])
async def test_it_reaches_queues_of_topics_whose_names_are_not_group_names(
    topic: str, viewer: User, redis_client: redis.Redis
) -> None:
    create_topic(redis_client, topic, 2)
    ingester = Ingester(redis_client)
    socket = communicator(
        f"/ws/queues/{topic.replace('%', '%25')}/1/", await session_cookie(viewer)
    )
    assert (await socket.connect())[0]
    snapshot = await socket.receive_json_from(timeout=5)

    ids = write_events(redis_client, topic, 1, 2)
    await sync_to_async(ingester.run_once)(0)
    await sync_to_async(ingester.push)()
    (update,) = await drain(socket)
    await socket.disconnect()

    assert snapshot["data"]["topic"] == topic
    assert (update["seq"], update["data"]["topic"]) == (2, topic)  # a fresh ingester's first
    assert [e["id"] for e in update["events"]] == ids[::-1]


def test_it_gives_every_topic_its_own_valid_group_name() -> None:
    names = ["orders", "retail%eu", "retail_eu", "t" * 128, "t" * 127 + "u"]

    groups = [queue_group(name, 1023) for name in names]

    assert groups[0] == "queue.orders.1023"
    assert len(set(groups)) == len(names)
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-]{1,99}", g) for g in groups), groups
