"""A send repeated with the same idempotency key (the argument or the header
``lockstep-idempotency-key``) stores the message once and returns the first send's offset,
for LOCKSTEP_IDEMPOTENCY_TTL_SECONDS; after that the key is forgotten."""

from __future__ import annotations

from typing import cast

import pytest
import redis

from lockstep.workers import InvalidMessageError, Producer, create_topic, keys
from lockstep.workers.hashing import queue_for_key
from lockstep.workers.message import IDEMPOTENCY_KEY_HEADER, decode_entry
from lockstep.workers.refs import QueueRef
from tests.support import wait_until

TOPIC = "payments"


def _stream(client: redis.Redis, key: str) -> list[tuple[bytes, dict[bytes, bytes]]]:
    ref = QueueRef(TOPIC, queue_for_key(key, 4))
    return cast(list[tuple[bytes, dict[bytes, bytes]]], client.xrange(keys.stream(ref)))


def test_it_stores_a_message_once_and_returns_the_first_offset_to_every_retry(
    redis_client: redis.Redis, producer: Producer
) -> None:
    create_topic(redis_client, TOPIC, 4)
    producer.send(TOPIC, "card-7", b"an earlier charge")

    first = producer.send(TOPIC, "card-7", b"charge 12.00", idempotency_key="charge-1")
    second = producer.send(TOPIC, "card-7", b"charge 12.00", idempotency_key="charge-1")
    third = producer.send(
        TOPIC, "card-7", b"charge 12.00", headers={IDEMPOTENCY_KEY_HEADER: "charge-1"}
    )
    other = producer.send(TOPIC, "card-7", b"charge 30.00", idempotency_key="charge-2")

    assert (first.offset, first.duplicate) == (1, False)
    assert [(r.offset, r.produced_at_ms, r.duplicate) for r in (second, third)] == [
        (1, first.produced_at_ms, True)
    ] * 2
    assert (other.offset, other.duplicate) == (2, False)
    ref = QueueRef(TOPIC, first.queue)
    stored = [decode_entry(ref, i, f) for i, f in _stream(redis_client, "card-7")]
    assert [(m.offset, m.body, m.headers) for m in stored] == [
        (0, b"an earlier charge", {}),
        (1, b"charge 12.00", {IDEMPOTENCY_KEY_HEADER: "charge-1"}),
        (2, b"charge 30.00", {IDEMPOTENCY_KEY_HEADER: "charge-2"}),
    ]


def test_it_keeps_the_record_for_the_configured_time_and_then_stores_again(
    redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    create_topic(redis_client, TOPIC, 4)
    monkeypatch.setenv("LOCKSTEP_IDEMPOTENCY_TTL_SECONDS", "1")
    producer = Producer(redis_url)
    try:
        first = producer.send(TOPIC, "card-7", b"charge 12.00", idempotency_key="charge-1")
        record = keys.idempotency(QueueRef(TOPIC, first.queue), "charge-1")
        ttl_ms = int(redis_client.pttl(record))
        wait_until(lambda: not redis_client.exists(record), 10, "the record to expire")
        after_expiry = producer.send(TOPIC, "card-7", b"charge 12.00", idempotency_key="charge-1")
    finally:
        producer.close()

    assert 0 < ttl_ms <= 1000
    assert (after_expiry.offset, after_expiry.duplicate) == (1, False)
    assert len(_stream(redis_client, "card-7")) == 2


def test_it_keeps_the_record_for_a_day_by_default(
    redis_client: redis.Redis, producer: Producer
) -> None:
    create_topic(redis_client, TOPIC, 4)

    sent = producer.send(TOPIC, "card-7", b"charge 12.00", idempotency_key="charge-1")

    ttl_s = int(redis_client.ttl(keys.idempotency(QueueRef(TOPIC, sent.queue), "charge-1")))
    assert 86_390 < ttl_s <= 86_400


def test_it_refuses_an_idempotency_key_that_contradicts_the_header(
    redis_client: redis.Redis, producer: Producer
) -> None:
    create_topic(redis_client, TOPIC, 4)

    with pytest.raises(InvalidMessageError, match="differs from the header"):
        producer.send(
            TOPIC,
            "card-7",
            b"charge 12.00",
            headers={IDEMPOTENCY_KEY_HEADER: "charge-1"},
            idempotency_key="charge-2",
        )
    with pytest.raises(InvalidMessageError, match="must be a non-empty string"):
        producer.send(TOPIC, "card-7", b"charge 12.00", idempotency_key="")

    assert _stream(redis_client, "card-7") == []
