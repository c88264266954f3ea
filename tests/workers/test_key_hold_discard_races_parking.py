"""A discard (docs/semantics.md §6) races the parking of the held key's messages: the parking of
the messages already waiting in the key's lane comes in a step after the dead letter, and
messages of the key pulled before the consumer notices the discard are parked too. Either
way they must still run, in order: the discarded key stays ``releasing`` until its consumer
has drained it, instead of being freed at once and leaving them stranded in a parked set
nobody reads (and no dashboard shows)."""

from __future__ import annotations

from typing import cast

import redis

from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.config import AfterDlq, Ordering
from lockstep.workers.dead_letters import discard
from lockstep.workers.inspect import list_dead_letters
from lockstep.workers.refs import QueueRef
from lockstep.workers.scripts import script
from tests.support import wait_until
from tests.workers.conftest import StartConsumer
from tests.workers.harness import body, events, handled, parked_keys, parked_offsets

TOPIC, GROUP = "orders", "billing-discard-race"
HELD = "order-1"


def _discard_between_dead_letter_and_parking(
    redis_client: redis.Redis, dlq_id: str, offset: int
) -> None:
    """Replay, in one MULTI/EXEC, the interleaving: the key's parked messages are not
    there yet when the discard runs, and land right after it."""
    parked_set = keys.parked_messages(QueueRef(TOPIC, 0), GROUP, HELD)
    members = cast(
        list[tuple[bytes, float]], redis_client.zrange(parked_set, 0, -1, withscores=True)
    )
    pipe = redis_client.pipeline(transaction=True)
    pipe.delete(parked_set)
    script(redis_client, "release_dead_letter")(
        keys=[
            keys.dead_letters(QueueRef(TOPIC, 0), GROUP),
            keys.parked_keys(QueueRef(TOPIC, 0), GROUP),
            parked_set,
        ],
        args=[dlq_id, "discard", HELD, offset, ""],
        client=pipe,
    )
    if members:
        pipe.zadd(parked_set, dict(members))
    pipe.execute()


def test_it_runs_messages_parked_right_after_their_dead_letter_was_discarded(
    redis_client: redis.Redis, producer: Producer, start_consumer: StartConsumer
) -> None:
    create_topic(redis_client, TOPIC, 1)
    producer.send(TOPIC, HELD, body(0, poison=True))
    parked = [producer.send(TOPIC, HELD, body(s)).offset for s in (1, 2)]
    start_consumer(
        TOPIC,
        GROUP,
        "keys-discard-race",
        ordering=Ordering.KEY,
        after_dlq=AfterDlq.HOLD,
        max_reconsume_times=0,
        flush_interval_ms=50,
    )
    wait_until(
        lambda: parked_offsets(redis_client, TOPIC, GROUP, 0, HELD) == parked,
        20,
        "seq 1 and 2 to be parked",
    )
    (letter,) = list_dead_letters(redis_client, TOPIC, GROUP)

    _discard_between_dead_letter_and_parking(redis_client, letter.id, letter.offset)

    wait_until(
        lambda: [r["s"] for r in handled(redis_client)] == [1, 2],
        10,
        lambda: (
            f"seq 1 and 2 to run: {[r['s'] for r in handled(redis_client)]}, "
            f"state {parked_keys(redis_client, TOPIC, GROUP, 0)}"
        ),
    )
    wait_until(lambda: not parked_keys(redis_client, TOPIC, GROUP, 0), 5, "the key to be released")
    assert parked_offsets(redis_client, TOPIC, GROUP, 0, HELD) == []
    wait_until(lambda: events(redis_client, "key_released"), 5, "the key_released event")


def test_it_runs_a_message_of_the_key_that_arrives_right_after_a_discard(
    redis_client: redis.Redis, producer: Producer, start_consumer: StartConsumer
) -> None:
    create_topic(redis_client, TOPIC, 1)
    producer.send(TOPIC, HELD, body(0, poison=True))
    start_consumer(
        TOPIC,
        GROUP,
        "keys-discard-then-send",
        ordering=Ordering.KEY,
        after_dlq=AfterDlq.HOLD,
        max_reconsume_times=0,
        flush_interval_ms=50,
    )
    wait_until(lambda: parked_keys(redis_client, TOPIC, GROUP, 0), 20, "the key to be held")
    (letter,) = list_dead_letters(redis_client, TOPIC, GROUP)

    assert discard(redis_client, QueueRef(TOPIC, 0), GROUP, letter.id)
    # Sent before the consumer polls the discard: it still sees the key held and parks it.
    producer.send(TOPIC, HELD, body(1))

    wait_until(
        lambda: [r["s"] for r in handled(redis_client)] == [1],
        10,
        lambda: (
            f"seq 1 of the released key to run: state "
            f"{parked_keys(redis_client, TOPIC, GROUP, 0)}, parked "
            f"{parked_offsets(redis_client, TOPIC, GROUP, 0, HELD)}"
        ),
    )
    wait_until(lambda: not parked_keys(redis_client, TOPIC, GROUP, 0), 5, "the key to be released")
    assert parked_offsets(redis_client, TOPIC, GROUP, 0, HELD) == []
    wait_until(lambda: events(redis_client, "key_released"), 5, "the key_released event")
    assert [e["key"] for e in events(redis_client, "key_released")] == [HELD]
