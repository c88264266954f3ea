"""Live consumers as ``workers.inspect`` reads them from their cards (``workers.cards``):
heartbeat age on Redis's clock, expired cards forgotten, each queue snapshot found by
(queue, group, consumer), and the members of one group."""

from __future__ import annotations

import json

import pytest
import redis

from lockstep.workers import keys
from lockstep.workers.cards import ConsumerCard, QueueSnapshot, SubscriptionCard
from lockstep.workers.inspect import (
    QueueCardKey,
    consumers,
    group_members,
    queue_cards,
    redis_now_ms,
)
from lockstep.workers.refs import QueueRef

pytestmark = pytest.mark.on_cluster


def _snapshot(state: str, retries: int = 0) -> QueueSnapshot:
    return {"state": state, "token": 3, "last_error": "", "retries": retries, "head_offset": 0}


def _subscription(topic: str, group: str, queues: dict[str, QueueSnapshot]) -> SubscriptionCard:
    return {
        "topic": topic,
        "group": group,
        "model": "clustering",
        "ordering": "queue",
        "lanes": 0,
        "assigned": sorted(int(q) for q in queues),
        "queues": queues,
    }


def _publish(
    client: redis.Redis, consumer_id: str, heartbeat_at_ms: int, *subs: SubscriptionCard
) -> None:
    """Publish a card as a consumer does every heartbeat."""
    card: ConsumerCard = {
        "host": "host",
        "pid": 4242,
        "started_at_ms": heartbeat_at_ms - 60_000,
        "heartbeat_at_ms": heartbeat_at_ms,
        "subscriptions": list(subs),
    }
    client.set(keys.consumer_info(consumer_id), json.dumps(card), ex=60)
    client.sadd(keys.CONSUMERS, consumer_id)


def test_it_ages_a_heartbeat_on_redis_time(redis_client: redis.Redis) -> None:
    now_ms = redis_now_ms(redis_client)
    _publish(redis_client, "c1", now_ms - 1500)

    (consumer,) = consumers(redis_client)

    assert (consumer["id"], consumer["host"], consumer["pid"]) == ("c1", "host", 4242)
    assert consumer["started_at_ms"] == now_ms - 61_500
    assert 1.5 <= consumer["heartbeat_age_s"] < 2.5


def test_it_reads_a_heartbeat_from_the_future_as_age_zero(redis_client: redis.Redis) -> None:
    _publish(redis_client, "c1", redis_now_ms(redis_client) + 5000)  # a clock ahead of Redis

    (consumer,) = consumers(redis_client)

    assert consumer["heartbeat_age_s"] == 0.0


def test_it_forgets_a_consumer_whose_card_expired(redis_client: redis.Redis) -> None:
    _publish(redis_client, "c1", redis_now_ms(redis_client))
    redis_client.sadd(keys.CONSUMERS, "c2")  # c2 stopped refreshing: its card is gone

    assert [c["id"] for c in consumers(redis_client)] == ["c1"]
    assert not redis_client.sismember(keys.CONSUMERS, "c2")


def test_it_finds_each_queue_snapshot_by_queue_group_and_consumer(
    redis_client: redis.Redis,
) -> None:
    now_ms = redis_now_ms(redis_client)
    _publish(
        redis_client,
        "c1",
        now_ms,
        _subscription("orders", "mailer", {"0": _snapshot("idle"), "2": _snapshot("blocked")}),
        _subscription("payments", "mailer", {"0": _snapshot("consuming")}),
    )
    _publish(
        redis_client, "c2", now_ms, _subscription("orders", "auditor", {"0": _snapshot("idle")})
    )

    orders = queue_cards(redis_client, "orders")
    everything = queue_cards(redis_client)

    assert set(orders) == {
        QueueCardKey(QueueRef("orders", 0), "auditor", "c2"),
        QueueCardKey(QueueRef("orders", 0), "mailer", "c1"),
        QueueCardKey(QueueRef("orders", 2), "mailer", "c1"),
    }
    assert orders[QueueCardKey(QueueRef("orders", 2), "mailer", "c1")]["state"] == "blocked"
    assert everything[QueueCardKey(QueueRef("payments", 0), "mailer", "c1")]["state"] == (
        "consuming"
    )
    assert len(everything) == 4


def test_it_lists_the_live_members_of_one_group_only(redis_client: redis.Redis) -> None:
    now_ms = redis_now_ms(redis_client)
    _publish(
        redis_client, "c1", now_ms, _subscription("orders", "mailer", {"0": _snapshot("idle")})
    )
    _publish(
        redis_client, "c2", now_ms, _subscription("orders", "mailer", {"1": _snapshot("idle")})
    )
    _publish(redis_client, "c3", now_ms, _subscription("orders", "auditor", {}))

    members = group_members(redis_client, "orders", "mailer")

    assert [(m["id"], m["assigned"], m["ordering"], m["lanes"]) for m in members] == [
        ("c1", [0], "queue", 0),
        ("c2", [1], "queue", 0),
    ]
