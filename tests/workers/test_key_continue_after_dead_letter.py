"""``after_dlq = continue`` (RocketMQ's behaviour, docs/semantics.md §5): once a key's message is
dead-lettered, the key's later messages run right away, each starting only after the
dead-lettering; nothing is parked."""

from __future__ import annotations

import redis

from lockstep.workers import Producer, create_topic
from lockstep.workers.config import AfterDlq, Ordering
from lockstep.workers.inspect import list_dead_letters
from tests.support import wait_until
from tests.workers.conftest import StartConsumer
from tests.workers.handlers import CALLS
from tests.workers.harness import (
    body,
    events,
    fully_committed,
    handled,
    parked_keys,
    parked_offsets,
    stored_offset,
)

TOPIC, GROUP = "orders", "billing-continue"
POISONED, OTHER = "order-1", "order-2"


def test_it_runs_the_keys_later_messages_right_after_the_dead_lettering(
    redis_client: redis.Redis, producer: Producer, start_consumer: StartConsumer
) -> None:
    create_topic(redis_client, TOPIC, 1)
    producer.send(TOPIC, POISONED, body(0))
    poison = producer.send(TOPIC, POISONED, body(1, poison=True)).offset
    for s in range(2, 5):
        producer.send(TOPIC, POISONED, body(s))
        producer.send(TOPIC, OTHER, body(s - 2))
    end = producer.send(TOPIC, OTHER, body(3)).offset + 1

    start_consumer(
        TOPIC,
        GROUP,
        "keys-continue",
        ordering=Ordering.KEY,
        after_dlq=AfterDlq.CONTINUE,
        max_reconsume_times=2,
        retry_initial_ms=20,
        flush_interval_ms=50,
    )
    wait_until(
        lambda: fully_committed(redis_client, TOPIC, GROUP, 1),
        20,
        "the queue to be committed to its end",
    )

    (letter,) = list_dead_letters(redis_client, TOPIC, GROUP)
    assert (letter.offset, letter.key, letter.reconsume_times) == (poison, POISONED, 2)
    assert int(redis_client.hget(CALLS, f"0:{poison}") or 0) == 3
    records = handled(redis_client)
    assert [r["s"] for r in records if r["k"] == POISONED] == [0, 2, 3, 4]
    assert [r["s"] for r in records if r["k"] == OTHER] == [0, 1, 2, 3]
    after = next(r for r in records if r["k"] == POISONED and r["s"] == 2)
    assert after["w0"] >= letter.dead_at_ms / 1000.0, "seq 2 started before seq 1 was dead"
    assert stored_offset(redis_client, TOPIC, GROUP, 0) == (end, "")
    assert parked_keys(redis_client, TOPIC, GROUP, 0) == {}
    assert parked_offsets(redis_client, TOPIC, GROUP, 0, POISONED) == []
    wait_until(lambda: events(redis_client, "dead_lettered"), 5, "the dead_lettered event")
    (dead,) = events(redis_client, "dead_lettered")
    assert (dead["key"], dead["details"]["after_dlq"]) == (POISONED, "continue")
    assert events(redis_client, "key_parked", "messages_parked") == []
