"""An entry in a queue stream that the runtime cannot decode (written by hand, or by another
tool) is moved to the dead-letter stream with the reason, and the queue keeps going."""

from __future__ import annotations

import redis

from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.broker import Broker
from lockstep.workers.refs import QueueRef
from tests.support import wait_until
from tests.workers.conftest import StartConsumer
from tests.workers.harness import body, events, fully_committed, handled, stream_entries

TOPIC, GROUP = "orders", "shipping"


def _write_by_hand(client: redis.Redis, queue: int, **fields: str) -> int:
    """Reserve the next offset the way produce.lua does and append an entry at
    "<offset>-1" with only the given fields."""
    offset = int(client.incr(keys.sequence(QueueRef(TOPIC, queue)))) - 1
    client.xadd(keys.stream(QueueRef(TOPIC, queue)), dict(fields), id=f"{offset}-1")  # type: ignore[arg-type]
    return offset


def test_it_dead_letters_a_malformed_entry_with_the_reason_and_keeps_consuming(
    redis_client: redis.Redis, producer: Producer, start_consumer: StartConsumer
) -> None:
    create_topic(redis_client, TOPIC, 1)
    producer.send(TOPIC, "order-7", body(0))
    no_body = _write_by_hand(redis_client, 0, k="order-7", t="1700000000000")
    bad_headers = _write_by_hand(redis_client, 0, k="order-7", b="x", h="[1]", t="1")
    producer.send(TOPIC, "order-7", body(1))
    producer.send(TOPIC, "order-7", body(2))

    start_consumer(TOPIC, GROUP, "malformed-reader")
    wait_until(
        lambda: fully_committed(redis_client, TOPIC, GROUP, 1),
        15,
        "the queue to move past the malformed entries",
    )

    assert [r["s"] for r in handled(redis_client)] == [0, 1, 2]
    dlq = [
        fields
        for _, fields in stream_entries(redis_client, keys.dead_letters(QueueRef(TOPIC, 0), GROUP))
    ]
    assert [int(f[b"offset"]) for f in dlq] == [no_body, bad_headers]
    assert dlq[0][b"error"].startswith(b"malformed entry: missing field")
    assert b"'b'" in dlq[0][b"error"]
    assert dlq[0][b"key"] == b"order-7"
    assert dlq[1][b"error"] == b"malformed entry: headers are not a JSON object"
    assert Broker(redis_client).read_offset(QueueRef(TOPIC, 0), GROUP).committed == 5
    reported = wait_until(
        lambda: events(redis_client, "malformed_entry"), 5, "malformed_entry events"
    )
    assert sorted(e["details"]["offset"] for e in reported) == [no_body, bad_headers]
