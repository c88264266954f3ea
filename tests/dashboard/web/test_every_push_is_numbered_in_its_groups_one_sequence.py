"""``web.publish`` numbers every push in one scheme: ``seq`` is the next number of its
channel group's counter in Redis, shared by every publisher of the group (a push lost
from any of them is a gap its receivers see); groups count on their own; a ``fresh``
publisher (just started) skips a number in each group it sends to, so its receivers
re-read what a predecessor may have held back."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from lockstep.dashboard.web.publish import publish

pytestmark = pytest.mark.django_db(transaction=True)


async def _listen(*groups: str) -> tuple[Any, str]:
    layer = get_channel_layer()
    channel = await layer.new_channel()
    for group in groups:
        await layer.group_add(group, channel)
    return layer, channel


async def _received(layer: Any, channel: str, count: int) -> list[dict[str, Any]]:
    return [await layer.receive(channel) for _ in range(count)]


async def test_pushes_to_a_group_count_up_by_one_whoever_sends_them(
    redis_client: redis.Redis,
) -> None:
    layer, channel = await _listen("progress-a")

    for what in ("the task", "a cancel", "the task"):
        sent = await sync_to_async(publish)([("progress-a", {"type": "x.update"})], what)
        assert sent == 1
    got = await _received(layer, channel, 3)

    assert [(m["type"], m["seq"]) for m in got] == [
        ("x.update", 1),
        ("x.update", 2),
        ("x.update", 3),
    ]


async def test_groups_count_on_their_own_and_a_batch_numbers_each_message(
    redis_client: redis.Redis,
) -> None:
    layer, channel = await _listen("g1", "g2")
    batch = [("g1", {"type": "x.update", "n": 1}), ("g2", {"type": "x.update", "n": 2})]
    batch.append(("g1", {"type": "x.update", "n": 3}))

    await sync_to_async(publish)(batch, "pushes")
    await sync_to_async(publish)([("g2", {"type": "x.update", "n": 4})], "pushes")
    got = await _received(layer, channel, 4)

    assert [(m["n"], m["seq"]) for m in got] == [(1, 1), (2, 1), (3, 2), (4, 2)]


async def test_a_fresh_publisher_leaves_a_gap_in_each_group_it_sends_to(
    redis_client: redis.Redis,
) -> None:
    layer, channel = await _listen("g1", "g2")
    await sync_to_async(publish)([("g1", {"type": "x.update"})], "the old ingester")

    await sync_to_async(publish)(
        [("g1", {"type": "x.update"}), ("g2", {"type": "x.update"})], "a new one", fresh=True
    )
    await sync_to_async(publish)([("g1", {"type": "x.update"})], "a new one")
    got = await _received(layer, channel, 4)

    assert [m["seq"] for m in got] == [1, 3, 2, 4]
