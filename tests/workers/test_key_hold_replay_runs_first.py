"""Order-preserving replay under ``after_dlq = hold`` (docs/semantics.md §6): a replayed dead
letter goes back to its key's place — it runs first, then the key's parked messages, in
order; a replayed message that fails again is dead-lettered again and holds its key again."""

from __future__ import annotations

import pytest
import redis

from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.config import AfterDlq, Ordering
from lockstep.workers.dead_letters import ReplayOutcome, replay
from lockstep.workers.inspect import DeadLetter, list_dead_letters
from lockstep.workers.refs import QueueRef
from tests.support import wait_until
from tests.workers.conftest import StartConsumer
from tests.workers.handlers import fail_flag
from tests.workers.harness import body, events, handled, parked_keys, parked_offsets

pytestmark = pytest.mark.on_cluster

TOPIC, GROUP = "orders", "billing-replay"
HELD, OTHER = "order-1", "order-2"


def _send_with_failing_seq_1(producer: Producer, redis_client: redis.Redis) -> dict[int, int]:
    """HELD: seq 0, seq 1 (fails while its flag is set), seq 2..4; OTHER in between.
    Returns HELD's seq -> offset."""
    redis_client.set(fail_flag(HELD), 1)
    offsets = {
        0: producer.send(TOPIC, HELD, body(0)).offset,
        1: producer.send(TOPIC, HELD, body(1, fail_while=HELD)).offset,
    }
    for s in range(2, 5):
        offsets[s] = producer.send(TOPIC, HELD, body(s)).offset
        producer.send(TOPIC, OTHER, body(s - 2))
    return offsets


def _held_with(redis_client: redis.Redis, parked: list[int]) -> DeadLetter:
    """Wait until HELD is held by one dead letter with ``parked`` behind it; return it."""

    def held() -> DeadLetter | None:
        letters = list_dead_letters(redis_client, TOPIC, GROUP)
        state = parked_keys(redis_client, TOPIC, GROUP, 0).get(HELD, {})
        if (
            len(letters) == 1
            and state.get("state") == "held"
            and state.get("dlq_id") == letters[0].id
            and parked_offsets(redis_client, TOPIC, GROUP, 0, HELD) == parked
        ):
            return letters[0]
        return None

    return wait_until(
        held,
        20,
        lambda: (
            f"{HELD} held with {parked} parked: dead letters "
            f"{list_dead_letters(redis_client, TOPIC, GROUP)}, state "
            f"{parked_keys(redis_client, TOPIC, GROUP, 0)}, parked "
            f"{parked_offsets(redis_client, TOPIC, GROUP, 0, HELD)}"
        ),
    )


def _held_seqs(redis_client: redis.Redis) -> list[int]:
    return [r["s"] for r in handled(redis_client) if r["k"] == HELD]


def test_it_runs_a_replayed_dead_letter_first_and_then_the_parked_messages_in_order(
    redis_client: redis.Redis, producer: Producer, start_consumer: StartConsumer
) -> None:
    create_topic(redis_client, TOPIC, 1)
    offsets = _send_with_failing_seq_1(producer, redis_client)
    start_consumer(
        TOPIC,
        GROUP,
        "keys-replay",
        ordering=Ordering.KEY,
        after_dlq=AfterDlq.HOLD,
        max_reconsume_times=1,
        retry_initial_ms=20,
        flush_interval_ms=50,
    )
    letter = _held_with(redis_client, [offsets[s] for s in (2, 3, 4)])
    assert letter.offset == offsets[1]
    assert _held_seqs(redis_client) == [0]

    redis_client.delete(fail_flag(HELD))
    replayed = replay(
        redis_client, QueueRef(TOPIC, 0), GROUP, letter.id, replay_id="r-1", actor="ops@example.com"
    )
    assert replayed.outcome is ReplayOutcome.IN_PLACE
    wait_until(
        lambda: _held_seqs(redis_client) == [0, 1, 2, 3, 4],
        10,
        lambda: f"the replayed seq 1, then seq 2..4: {_held_seqs(redis_client)}",
    )
    wait_until(lambda: not parked_keys(redis_client, TOPIC, GROUP, 0), 5, "the key to be released")

    records = {r["s"]: r for r in handled(redis_client) if r["k"] == HELD}
    assert records[1]["o"] == offsets[1]  # at its own place, not re-produced
    assert records[1]["t1"] <= records[2]["t0"], "seq 2 started before the replay ended"
    assert parked_offsets(redis_client, TOPIC, GROUP, 0, HELD) == []
    assert redis_client.xlen(keys.dead_letters(QueueRef(TOPIC, 0), GROUP)) == 0
    again = replay(redis_client, QueueRef(TOPIC, 0), GROUP, letter.id)
    assert again.outcome is ReplayOutcome.MISSING, "replay is not idempotent"
    assert [r["s"] for r in handled(redis_client)].count(1) == 2  # HELD's and OTHER's seq 1
    wait_until(lambda: events(redis_client, "key_released"), 5, "the key_released event")
    (audit,) = events(redis_client, "dead_letter_replayed")
    assert audit["details"] == {
        "dlq_id": letter.id,
        "offset": offsets[1],
        "actor": "ops@example.com",
        "replay_id": "r-1",
        "outcome": "in_place",
        "new_offset": None,
    }


def test_it_holds_the_key_again_when_a_replayed_dead_letter_fails_again(
    redis_client: redis.Redis, producer: Producer, start_consumer: StartConsumer
) -> None:
    create_topic(redis_client, TOPIC, 1)
    offsets = _send_with_failing_seq_1(producer, redis_client)
    start_consumer(
        TOPIC,
        GROUP,
        "keys-replay-again",
        ordering=Ordering.KEY,
        after_dlq=AfterDlq.HOLD,
        max_reconsume_times=1,
        retry_initial_ms=20,
        flush_interval_ms=50,
    )
    parked = [offsets[s] for s in (2, 3, 4)]
    first = _held_with(redis_client, parked)

    # The flag is still set: the replay fails again.
    assert replay(redis_client, QueueRef(TOPIC, 0), GROUP, first.id).done
    second = wait_until(
        lambda: next(
            (d for d in list_dead_letters(redis_client, TOPIC, GROUP) if d.id != first.id), None
        ),
        10,
        "the replay to be dead-lettered again",
    )
    assert _held_with(redis_client, parked) == second
    assert second.offset == offsets[1]
    assert _held_seqs(redis_client) == [0]

    redis_client.delete(fail_flag(HELD))
    assert replay(redis_client, QueueRef(TOPIC, 0), GROUP, second.id).done
    wait_until(
        lambda: _held_seqs(redis_client) == [0, 1, 2, 3, 4],
        10,
        lambda: f"the second replay, then seq 2..4: {_held_seqs(redis_client)}",
    )
    wait_until(lambda: not parked_keys(redis_client, TOPIC, GROUP, 0), 5, "the key to be released")
    assert [e["details"]["dlq_id"] for e in events(redis_client, "key_parked")] == [
        first.id,
        second.id,
    ]
