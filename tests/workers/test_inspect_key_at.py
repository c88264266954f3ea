"""The key at an offset (the queue page names the message a queue-ordering consumer is
retrying by it): the key of that very entry, or "" when the stream has no such entry."""

from __future__ import annotations

import pytest
import redis

from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.inspect import key_at
from lockstep.workers.refs import QueueRef

pytestmark = pytest.mark.on_cluster

REF = QueueRef("orders", 0)


def test_it_reads_the_key_of_the_entry_at_the_offset(
    redis_client: redis.Redis, producer: Producer
) -> None:
    create_topic(redis_client, "orders", 1)
    sent = [producer.send("orders", key, b"x") for key in ("order-1", "order-2", "order-3")]

    assert [key_at(redis_client, REF, s.offset) for s in sent] == ["order-1", "order-2", "order-3"]


def test_it_answers_empty_for_an_offset_not_produced_yet(
    redis_client: redis.Redis, producer: Producer
) -> None:
    create_topic(redis_client, "orders", 1)
    producer.send("orders", "order-1", b"x")

    assert key_at(redis_client, REF, 1) == ""


def test_it_answers_empty_for_a_trimmed_offset_rather_than_the_next_entrys_key(
    redis_client: redis.Redis, producer: Producer
) -> None:
    create_topic(redis_client, "orders", 1)
    first, second = producer.send("orders", "order-1", b"x"), producer.send("orders", "k2", b"x")
    redis_client.xdel(keys.stream(REF), f"{first.offset}-1")

    assert key_at(redis_client, REF, first.offset) == ""
    assert key_at(redis_client, REF, second.offset) == "k2"


def test_it_answers_empty_for_a_malformed_entry(redis_client: redis.Redis) -> None:
    create_topic(redis_client, "orders", 1)
    redis_client.xadd(keys.stream(REF), {"b": b"no key field", "t": 1}, id="0-1")

    assert key_at(redis_client, REF, 0) == ""
