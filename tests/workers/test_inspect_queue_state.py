"""A queue's state as ``workers.inspect`` joins it: the lag of each group with the card of
the consumer that holds the queue's lock, and no one else's."""

from __future__ import annotations

import json

import pytest
import redis

from lockstep.workers import create_topic, keys
from lockstep.workers.cards import ConsumerCard, QueueSnapshot
from lockstep.workers.inspect import QueueState, queue_of, queue_state, redis_now_ms, topic_state
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group

pytestmark = pytest.mark.on_cluster

REF = QueueRef("orders", 1)


def _lock(client: redis.Redis, group: str, owner: str, token: int) -> None:
    now_ms = redis_now_ms(client)
    client.hset(
        keys.lock(REF, group),
        mapping={
            "owner": owner,
            "token": token,
            "expires_at": now_ms + 60_000,
            "granted_at": now_ms,
        },
    )


def _publish(
    client: redis.Redis, consumer_id: str, group: str, snapshot: QueueSnapshot | None
) -> None:
    """A fresh card of ``consumer_id`` showing ``snapshot`` for REF (no queue when None)."""
    card: ConsumerCard = {
        "host": "host",
        "pid": 1,
        "started_at_ms": 0,
        "heartbeat_at_ms": redis_now_ms(client),
        "subscriptions": [
            {
                "topic": REF.topic,
                "group": group,
                "model": "clustering",
                "ordering": "key",
                "lanes": 4,
                "assigned": [REF.queue],
                "queues": {str(REF.queue): snapshot} if snapshot is not None else {},
            }
        ],
    }
    client.set(keys.consumer_info(consumer_id), json.dumps(card))
    client.sadd(keys.CONSUMERS, consumer_id)


def _blocked_snapshot(since_ms: int) -> QueueSnapshot:
    return {
        "state": "blocked",
        "token": 5,
        "last_error": "RuntimeError: card declined",
        "retries": 0,
        "head_offset": 7,
        "low_water": 7,
        "highest_completed": 9,
        "in_flight": 2,
        "flow_paused": False,
        "blocked_keys": [
            {
                "key": "order-7",
                "offset": 7,
                "retries": 4,
                "waiting": 1,
                "error": "RuntimeError: card declined",
                "since_ms": since_ms,
            }
        ],
        "blocked_count": 1,
        "parked_keys": [],
        "parked_count": 0,
    }


@pytest.fixture
def orders(redis_client: redis.Redis) -> redis.Redis:
    create_topic(redis_client, "orders", 2)
    register_group(redis_client, "orders", "mailer")
    register_group(redis_client, "orders", "auditor")
    return redis_client


def test_it_takes_the_state_from_the_lock_owners_card(orders: redis.Redis) -> None:
    _lock(orders, "mailer", "c1", 5)
    _publish(orders, "c1", "mailer", _blocked_snapshot(1_795_257_000_000))
    _publish(orders, "c2", "mailer", {**_blocked_snapshot(1), "state": "lock_expired"})

    groups = {g["group"]: g for g in queue_state(orders, REF)["groups"]}
    mailer, auditor = groups["mailer"], groups["auditor"]

    assert (mailer["owner"], mailer["token"], mailer["state"]) == ("c1", 5, "blocked")
    assert mailer["blocked_keys"][0]["since_ms"] == 1_795_257_000_000
    assert (mailer["low_water"], mailer["in_flight"], mailer["blocked_count"]) == (7, 2, 1)
    assert mailer["parked_key_states"] == []
    assert mailer["lock_age_ms"] is not None and mailer["lock_age_ms"] >= 0
    assert (auditor["owner"], auditor["state"], auditor["retries"]) == (None, "unowned", 0)
    assert "blocked_keys" not in auditor


def test_it_says_unknown_while_the_owners_card_does_not_show_the_queue(
    orders: redis.Redis,
) -> None:
    _lock(orders, "mailer", "c1", 2)
    _publish(orders, "c1", "mailer", None)

    state = queue_state(orders, REF)

    (mailer,) = [g for g in state["groups"] if g["group"] == "mailer"]
    assert (mailer["state"], mailer["retries"], mailer["last_error"]) == ("unknown", 0, "")
    assert "low_water" not in mailer


def test_it_slices_a_queue_out_of_its_topics_state_as_queue_state_reads_it(
    orders: redis.Redis,
) -> None:
    _lock(orders, "mailer", "c1", 2)
    _publish(orders, "c1", "mailer", None)
    orders.set(keys.sequence(REF), 12)

    sliced = queue_of(topic_state(orders, "orders"), REF.queue)
    read = queue_state(orders, REF)

    def shown(state: QueueState) -> list[tuple[object, ...]]:
        return [
            (
                state["topic"],
                state["queue"],
                state["max_offset"],
                g["group"],
                g["owner"],
                g["state"],
            )
            for g in state["groups"]
        ]

    assert shown(sliced) == shown(read)
    assert shown(read) == [
        ("orders", 1, 12, "auditor", None, "unowned"),
        ("orders", 1, 12, "mailer", "c1", "unknown"),
    ]


def test_it_refuses_a_queue_the_topic_does_not_have(orders: redis.Redis) -> None:
    with pytest.raises(ValueError, match=r"topic 'orders' has no queue 2 \(0..1\)"):
        queue_state(orders, QueueRef("orders", 2))


def test_it_says_no_live_consumer_while_the_lock_belongs_to_a_consumer_without_a_card(
    orders: redis.Redis,
) -> None:
    _lock(orders, "mailer", "gone", 2)

    (mailer,) = [g for g in queue_state(orders, REF)["groups"] if g["group"] == "mailer"]

    assert (mailer["owner"], mailer["state"]) == ("gone", "no_live_consumer")
