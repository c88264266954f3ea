"""Held keys (``after_dlq = hold``) as ``workers.inspect`` reads them back, written by the
runtime's own scripts: the dead letter that holds the key, the messages parked behind it,
and the key's release after a discard."""

from __future__ import annotations

import pytest
import redis

from lockstep.workers import create_topic
from lockstep.workers.broker import Broker, dead_letter_entry
from lockstep.workers.config import AfterDlq, Ordering, Subscription
from lockstep.workers.dead_letters import discard
from lockstep.workers.inspect import held_keys, holds, parked_messages, parked_offsets, redis_now_ms
from lockstep.workers.message import Message, serialize
from lockstep.workers.refs import QueueRef

pytestmark = pytest.mark.on_cluster

GROUP = "mailer"


def _message(ref: QueueRef, offset: int, key: str) -> Message:
    return Message(ref.topic, ref.queue, offset, key, f"body {offset}".encode(), {}, 1_795_257.5)


def _hold_key(client: redis.Redis, ref: QueueRef, key: str, dead: int, parked: list[int]) -> str:
    """Dead-letter ``key``'s message at offset ``dead`` holding the key, then park the key's
    messages at ``parked`` offsets, as the key-ordering worker does. Returns the dlq id."""
    broker = Broker(client)
    (grant,) = broker.lock_batch([ref], GROUP, "c1", 60.0)
    sub = Subscription(ref.topic, GROUP, "h.h", ordering=Ordering.KEY, after_dlq=AfterDlq.HOLD)
    entry = dead_letter_entry(_message(ref, dead, key), sub, "RuntimeError: card declined")
    held = broker.dead_letter(ref, GROUP, "c1", grant.token, dead + 1, entry, park_key=key)
    assert held.ok
    members = [(o, serialize(_message(ref, o, key))) for o in parked]
    assert broker.park(ref, GROUP, "c1", grant.token, key, members, dead + 1, "").ok
    return held.dlq_id


def test_it_lists_a_held_key_with_its_dead_letter_and_how_many_messages_wait(
    redis_client: redis.Redis,
) -> None:
    create_topic(redis_client, "orders", 2)
    ref = QueueRef("orders", 1)
    before_ms = redis_now_ms(redis_client)
    dlq_id = _hold_key(redis_client, ref, "order-7", 3, [4, 6])

    (held,) = held_keys(redis_client, "orders", GROUP)

    assert {k: v for k, v in held.items() if k != "since_ms"} == {
        "queue": 1,
        "key": "order-7",
        "state": "held",
        "offset": 3,
        "dlq_id": dlq_id,
        "messages": 2,
    }
    assert held["since_ms"] is not None
    assert before_ms <= held["since_ms"] <= redis_now_ms(redis_client)


def test_it_maps_each_parked_offset_to_the_hold_of_its_key(redis_client: redis.Redis) -> None:
    create_topic(redis_client, "orders", 1)
    ref = QueueRef("orders", 0)
    _hold_key(redis_client, ref, "order-1", 0, [2, 5])
    _hold_key(redis_client, ref, "order-2", 1, [3])

    by_offset = parked_offsets(redis_client, ref, GROUP)
    key_holds = holds(redis_client, ref, GROUP)

    assert sorted(by_offset) == [2, 3, 5]
    assert by_offset[2] == by_offset[5] == key_holds["order-1"]
    assert by_offset[3] == key_holds["order-2"]
    assert key_holds["order-2"]["offset"] == 1


def test_it_reads_the_parked_messages_back_in_offset_order(redis_client: redis.Redis) -> None:
    create_topic(redis_client, "orders", 1)
    ref = QueueRef("orders", 0)
    _hold_key(redis_client, ref, "order-1", 0, [9, 4, 6])

    parked = parked_messages(redis_client, ref, GROUP, "order-1")

    assert [(m.offset, m.key, m.body) for m in parked] == [
        (4, "order-1", b"body 4"),
        (6, "order-1", b"body 6"),
        (9, "order-1", b"body 9"),
    ]


def test_it_shows_a_discarded_keys_hold_as_releasing_until_its_consumer_drains_it(
    redis_client: redis.Redis,
) -> None:
    create_topic(redis_client, "orders", 1)
    ref = QueueRef("orders", 0)
    dlq_id = _hold_key(redis_client, ref, "order-1", 0, [1])

    assert discard(redis_client, QueueRef("orders", 0), GROUP, dlq_id)

    (held,) = held_keys(redis_client, "orders", GROUP)
    assert (held["state"], held["dlq_id"], held["messages"]) == ("releasing", dlq_id, 1)


def test_it_lists_no_held_keys_for_a_group_that_never_held_one(redis_client: redis.Redis) -> None:
    create_topic(redis_client, "orders", 4)

    assert held_keys(redis_client, "orders", GROUP) == []
    assert parked_offsets(redis_client, QueueRef("orders", 0), GROUP) == {}
