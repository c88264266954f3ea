"""One round trip through every Redis client Lockstep makes from a URL: the producer, an
ordered consumer, the dashboard's client (its JSON views read through it) and the
Channels layer. Shared by the AUTH and TLS tests, which differ only in the URL."""

from __future__ import annotations

import asyncio
from typing import Any

import redis
from channels_redis.core import RedisChannelLayer

from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.workers import create_topic
from lockstep.workers.inspect import overview
from tests.dashboard.helpers import produce, running_consumer
from tests.support import probe_until

TOPIC, GROUP, MESSAGES = "orders", "mailer", 12


def consume_through(url: str, settings: Any) -> dict[str, int]:
    """Produce, consume and read the lag through ``url``; returns the mailer group's lag
    per queue as the dashboard's client reads it (all 0 once every message is handled)."""
    create_topic(redis.Redis.from_url(url), TOPIC, 2)
    produce(url, TOPIC, [f"order-{i}" for i in range(MESSAGES)])
    with running_consumer(url, TOPIC, GROUP) as (_, recorder):
        handled = probe_until(recorder.count, lambda n: n == MESSAGES)
        assert handled == MESSAGES
        settings.REDIS_URL = url
        return probe_until(lambda: _lag(get_redis()), lambda lag: not any(lag.values()))


def _lag(client: redis.Redis) -> dict[str, int]:
    (topic,) = overview(client)["topics"]
    return {f"{q['queue']}/{g['group']}": g["lag"] for q in topic["queues"] for g in q["groups"]}


def channel_layer_round_trip(url: str) -> dict[str, Any]:
    """A group message through a Channels layer on ``url``, as the live pages get theirs."""

    async def trip() -> dict[str, Any]:
        layer = RedisChannelLayer(hosts=[url])
        channel = await layer.new_channel()
        await layer.group_add("overview", channel)
        await layer.group_send("overview", {"type": "overview.changed", "seq": 1})
        message = await asyncio.wait_for(layer.receive(channel), timeout=5)
        await layer.flush()
        return dict(message)

    return asyncio.run(trip())
