"""A push that also runs a step of a sweep of the fleet sends twice: first the changes of
the queues events named (and watched ones), then the step's. A change an event told of
is on the sockets as soon as its queue is read, not after the step's thousand pairs
(docs/fleet-state.md)."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from lockstep.dashboard.monitor.live import (
    EVENTS_GROUP,
    OVERVIEW_GROUP,
    Publisher,
    queue_group,
    watch,
)
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.workers.refs import QueueRef
from tests.dashboard.fleets import commit_event, make_fleet, set_max_offset

pytestmark = pytest.mark.django_db(transaction=True)


async def _received(layer: Any, channel: str, count: int) -> list[dict[str, Any]]:
    return [await layer.receive(channel) for _ in range(count)]


async def test_the_named_queue_update_comes_before_the_steps_overview_hint(
    redis_client: redis.Redis,
) -> None:
    make_fleet(redis_client, ["orders", "payments"], 600, ["mailer", "auditor"])
    last = QueueRef("payments", 599)  # in the sweep's last step of three
    layer = get_channel_layer()
    channel = await layer.new_channel()
    for group in (OVERVIEW_GROUP, EVENTS_GROUP):
        await layer.group_add(group, channel)
    await layer.group_add(queue_group(last.topic, last.queue), channel)
    watch(redis_client, last, channel)
    publisher = Publisher(get_redis())
    first = await sync_to_async(publisher.push)()
    await _received(layer, channel, first)

    set_max_offset(redis_client, last, 900)
    publisher.record([commit_event(last, "mailer")], "1-1")
    sent = await sync_to_async(publisher.push)()
    got = await _received(layer, channel, sent)
    await sync_to_async(publisher.stop)()

    assert [m["type"] for m in got] == [
        "overview.update",
        "queue.update",
        "events.hint",
        "overview.update",  # the step's
    ]
    assert got[1]["data"]["max_offset"] == 900
    assert publisher.writer.sweeping  # the step ran: the sweep's second of three
