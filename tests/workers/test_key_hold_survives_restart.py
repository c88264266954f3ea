"""Parking is durable (docs/semantics.md §5): a consumer process stopped while a key is held
leaves the key held and its messages parked in Redis; the next consumer keeps the key held
(parking what was produced in between), and after the dead letter is discarded it runs the
parked messages in their original order."""

from __future__ import annotations

import time

import redis

from lockstep.workers import Producer, create_topic
from lockstep.workers.dead_letters import discard
from lockstep.workers.inspect import list_dead_letters
from lockstep.workers.refs import QueueRef
from tests.support import wait_until
from tests.workers.conftest import SpawnConsumer
from tests.workers.harness import (
    body,
    fully_committed,
    handled,
    lock_owners,
    parked_keys,
    parked_offsets,
)

TOPIC, GROUP = "orders", "billing-restart"
HELD, OTHER = "order-1", "order-2"
HOLD_ARGS = (
    "--ordering",
    "key",
    "--after-dlq",
    "hold",
    "--max-reconsume-times",
    "1",
    "--retry-initial-ms",
    "20",
    "--flush-interval-ms",
    "50",
)


def _held_seqs(redis_client: redis.Redis) -> list[int]:
    return [r["s"] for r in handled(redis_client) if r["k"] == HELD]


def test_it_keeps_parked_messages_through_a_consumer_restart_and_runs_them_on_discard(
    redis_client: redis.Redis, producer: Producer, spawn_consumer: SpawnConsumer
) -> None:
    create_topic(redis_client, TOPIC, 1)
    offsets = {
        0: producer.send(TOPIC, HELD, body(0)).offset,
        1: producer.send(TOPIC, HELD, body(1, poison=True)).offset,
    }
    for s in (2, 3):
        offsets[s] = producer.send(TOPIC, HELD, body(s)).offset
    producer.send(TOPIC, OTHER, body(0))

    first = spawn_consumer(TOPIC, GROUP, "hold-first", *HOLD_ARGS)
    wait_until(
        lambda: parked_offsets(redis_client, TOPIC, GROUP, 0, HELD) == [offsets[2], offsets[3]],
        30,
        "seq 2 and 3 to be parked",
    )
    assert first.stop() == 0, first.output()[-3000:]
    assert lock_owners(redis_client, TOPIC, GROUP, 1) == {}

    # Produced while no consumer runs: the next one must park it, not run it.
    offsets[4] = producer.send(TOPIC, HELD, body(4)).offset
    producer.send(TOPIC, OTHER, body(1))
    second = spawn_consumer(TOPIC, GROUP, "hold-second", *HOLD_ARGS)
    wait_until(
        lambda: (
            parked_offsets(redis_client, TOPIC, GROUP, 0, HELD)
            == [offsets[2], offsets[3], offsets[4]]
        ),
        30,
        "seq 4 to be parked by the second consumer",
    )
    wait_until(
        lambda: fully_committed(redis_client, TOPIC, GROUP, 1),
        10,
        "the second consumer to commit past the parked messages",
    )
    # Nothing may run while the key is held: watch five of the consumer's polls
    # (poll_block_s 0.1 s), the time it would need to (wrongly) run a parked message.
    time.sleep(0.5)
    records = handled(redis_client)
    assert [r["s"] for r in records if r["k"] == OTHER] == [0, 1]
    assert _held_seqs(redis_client) == [0]
    assert {r["c"] for r in records if r["k"] == OTHER and r["s"] == 1} == {"hold-second"}
    (letter,) = list_dead_letters(redis_client, TOPIC, GROUP)
    assert parked_keys(redis_client, TOPIC, GROUP, 0)[HELD]["dlq_id"] == letter.id

    assert discard(redis_client, QueueRef(TOPIC, 0), GROUP, letter.id)
    wait_until(
        lambda: _held_seqs(redis_client) == [0, 2, 3, 4],
        15,
        lambda: f"the parked messages to run in order: {_held_seqs(redis_client)}",
    )
    wait_until(lambda: not parked_keys(redis_client, TOPIC, GROUP, 0), 5, "the key to be released")
    assert parked_offsets(redis_client, TOPIC, GROUP, 0, HELD) == []
    assert {r["c"] for r in handled(redis_client) if r["k"] == HELD and r["s"] > 0} == {
        "hold-second"
    }
    assert second.stop() == 0, second.output()[-3000:]
