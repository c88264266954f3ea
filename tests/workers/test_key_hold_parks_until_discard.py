"""``after_dlq = hold`` (docs/semantics.md §5): once a key's message is dead-lettered, the key's
later messages — those already pulled and those produced afterwards — are parked in Redis
and left untouched while other keys flow; discarding the dead letter releases the key and
its parked messages run in their original order."""

from __future__ import annotations

import time

import redis

from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.config import AfterDlq, Ordering
from lockstep.workers.dead_letters import discard
from lockstep.workers.inspect import list_dead_letters
from lockstep.workers.refs import QueueRef
from tests.support import wait_until
from tests.workers.conftest import StartConsumer
from tests.workers.harness import (
    body,
    events,
    fully_committed,
    handled,
    parked_keys,
    parked_offsets,
)

TOPIC, GROUP = "orders", "billing-hold"
HELD, OTHER = "order-1", "order-2"


def test_it_parks_a_held_keys_later_messages_until_its_dead_letter_is_discarded(
    redis_client: redis.Redis, producer: Producer, start_consumer: StartConsumer
) -> None:
    create_topic(redis_client, TOPIC, 1)
    offsets = {(HELD, 0): producer.send(TOPIC, HELD, body(0)).offset}
    offsets[HELD, 1] = producer.send(TOPIC, HELD, body(1, poison=True)).offset
    for s in range(2, 5):
        offsets[HELD, s] = producer.send(TOPIC, HELD, body(s)).offset
        producer.send(TOPIC, OTHER, body(s - 2))

    start_consumer(
        TOPIC,
        GROUP,
        "keys-hold",
        ordering=Ordering.KEY,
        after_dlq=AfterDlq.HOLD,
        max_reconsume_times=2,
        retry_initial_ms=20,
        flush_interval_ms=50,
    )
    parked = lambda: parked_offsets(redis_client, TOPIC, GROUP, 0, HELD)  # noqa: E731
    wait_until(
        lambda: parked() == [offsets[HELD, s] for s in (2, 3, 4)],
        20,
        lambda: f"seq 2..4 to be parked, are {parked()}",
    )
    for s in (5, 6):  # produced after the key was held: parked too
        offsets[HELD, s] = producer.send(TOPIC, HELD, body(s)).offset
    producer.send(TOPIC, OTHER, body(3))
    wait_until(lambda: len(parked()) == 5, 10, "seq 5 and 6 to be parked")
    wait_until(
        lambda: fully_committed(redis_client, TOPIC, GROUP, 1),
        10,
        "the queue to be committed past the parked messages",
    )
    time.sleep(0.5)  # time the consumer would need to (wrongly) run a parked message

    (letter,) = list_dead_letters(redis_client, TOPIC, GROUP)
    assert letter.offset == offsets[HELD, 1] and letter.key == HELD
    state = parked_keys(redis_client, TOPIC, GROUP, 0)
    assert set(state) == {HELD}
    assert (state[HELD]["state"], state[HELD]["dlq_id"], state[HELD]["offset"]) == (
        "held",
        letter.id,
        offsets[HELD, 1],
    )
    assert parked() == [offsets[HELD, s] for s in range(2, 7)]
    records = handled(redis_client)
    assert [r["s"] for r in records if r["k"] == HELD] == [0]
    assert [r["s"] for r in records if r["k"] == OTHER] == [0, 1, 2, 3]

    assert discard(redis_client, QueueRef(TOPIC, 0), GROUP, letter.id, actor="ops@example.com")
    wait_until(
        lambda: [r["s"] for r in handled(redis_client) if r["k"] == HELD] == [0, 2, 3, 4, 5, 6],
        10,
        lambda: (
            "the parked messages to run in order, handled: "
            f"{[r['s'] for r in handled(redis_client) if r['k'] == HELD]}"
        ),
    )
    wait_until(lambda: not parked_keys(redis_client, TOPIC, GROUP, 0), 5, "the key to be released")

    assert parked() == []
    assert redis_client.xlen(keys.dead_letters(QueueRef(TOPIC, 0), GROUP)) == 0
    assert not discard(redis_client, QueueRef(TOPIC, 0), GROUP, letter.id), (
        "discard is not idempotent"
    )
    producer.send(TOPIC, HELD, body(7))  # the released key flows again
    wait_until(
        lambda: [r["s"] for r in handled(redis_client) if r["k"] == HELD][-1:] == [7],
        10,
        "seq 7 of the released key",
    )
    wait_until(lambda: events(redis_client, "key_released"), 5, "the key_released event")
    (parked_event,) = events(redis_client, "key_parked")
    assert parked_event["key"] == HELD
    assert parked_event["details"] == {"offset": offsets[HELD, 1], "dlq_id": letter.id}
    parked_by_event = sorted(
        o for e in events(redis_client, "messages_parked") for o in e["details"]["offsets"]
    )
    assert parked_by_event == [offsets[HELD, s] for s in range(2, 7)]
    (discarded,) = events(redis_client, "dead_letter_discarded")
    assert discarded["details"]["actor"] == "ops@example.com"
    assert [e["key"] for e in events(redis_client, "key_released")] == [HELD]
