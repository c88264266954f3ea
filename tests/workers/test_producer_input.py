"""Sending refuses what it cannot store in order, with a message that says what to do, and
stores nothing when it refuses."""

from __future__ import annotations

import pytest
import redis

from lockstep.workers import InvalidMessageError, Producer, UnknownTopicError, create_topic, keys
from lockstep.workers.config import Limits
from lockstep.workers.refs import QueueRef


def _stored(client: redis.Redis, topic: str, queues: int) -> int:
    return sum(int(client.xlen(keys.stream(QueueRef(topic, q)))) for q in range(queues))


def test_it_refuses_to_send_to_a_topic_that_does_not_exist(
    redis_client: redis.Redis, producer: Producer
) -> None:
    with pytest.raises(UnknownTopicError) as refused:
        producer.send("no-such-topic", "order-1", b"paid")

    assert str(refused.value) == (
        "topic 'no-such-topic' does not exist; create it with "
        "`lockstep.create_topic(redis_url, 'no-such-topic', queues)` or "
        "`lockstep manage create_topic no-such-topic --queues N`"
    )
    assert redis_client.keys("ls:{no-such-topic*") == []


def test_it_refuses_a_body_that_is_not_bytes(redis_client: redis.Redis, producer: Producer) -> None:
    create_topic(redis_client, "orders", 4)

    with pytest.raises(InvalidMessageError, match=r"body must be bytes, got str; encode it"):
        producer.send("orders", "order-1", "paid")  # type: ignore[arg-type]
    with pytest.raises(InvalidMessageError, match=r"body must be bytes, got dict"):
        producer.send("orders", "order-1", {"status": "paid"})  # type: ignore[arg-type]

    assert _stored(redis_client, "orders", 4) == 0


def test_it_refuses_a_body_over_the_configured_limit(
    redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    create_topic(redis_client, "orders", 4)
    monkeypatch.setenv("LOCKSTEP_MAX_BODY_BYTES", "1024")
    assert Limits.from_env().max_body_bytes == 1024
    producer = Producer(redis_url)

    try:
        assert producer.send("orders", "order-1", b"x" * 1024).offset == 0  # at the limit
        with pytest.raises(InvalidMessageError) as refused:
            producer.send("orders", "order-1", b"x" * 1025)
    finally:
        producer.close()

    assert str(refused.value) == (
        "body is 1025 bytes, over the limit of 1024 (LOCKSTEP_MAX_BODY_BYTES)"
    )
    assert _stored(redis_client, "orders", 4) == 1


def test_it_refuses_an_empty_key(redis_client: redis.Redis, producer: Producer) -> None:
    create_topic(redis_client, "orders", 4)

    with pytest.raises(InvalidMessageError, match="key must be a non-empty string"):
        producer.send("orders", "", b"paid")

    assert _stored(redis_client, "orders", 4) == 0
