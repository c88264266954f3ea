"""Fenced ownership: offsets and dead letters move only with the current owner's token."""

from __future__ import annotations

import redis

from lockstep.workers import keys
from lockstep.workers.broker import Broker, CommitOutcome
from lockstep.workers.refs import QueueRef
from tests.workers.harness import wait_for_lock_expiry

TOPIC, GROUP, QUEUE = "payments", "ledger", 0
REF = QueueRef(TOPIC, QUEUE)


def _lock(broker: Broker, owner: str, ttl_s: float = 30.0) -> int:
    (grant,) = broker.lock_batch([QueueRef(TOPIC, QUEUE)], GROUP, owner, ttl_s)
    return grant.token


def test_it_rejects_a_commit_with_a_stale_fencing_token(redis_client: redis.Redis) -> None:
    broker = Broker(redis_client)
    stale = _lock(broker, "paused-consumer", ttl_s=0.2)
    assert broker.commit(QueueRef(TOPIC, QUEUE), GROUP, "paused-consumer", stale, 5).ok
    wait_for_lock_expiry(redis_client, REF, GROUP)  # the paused consumer's lock expires...
    successor = _lock(broker, "successor")  # ...and the queue is granted to another
    assert successor > stale

    late = broker.commit(QueueRef(TOPIC, QUEUE), GROUP, "paused-consumer", stale, 9)

    assert late.outcome is CommitOutcome.FENCED
    assert late.current_token == successor
    assert broker.read_offset(QueueRef(TOPIC, QUEUE), GROUP).committed == 5
    assert broker.commit(QueueRef(TOPIC, QUEUE), GROUP, "successor", successor, 7).ok
    assert broker.read_offset(QueueRef(TOPIC, QUEUE), GROUP).committed == 7


def test_it_rejects_a_commit_after_the_lock_expired_even_if_nobody_took_it(
    redis_client: redis.Redis,
) -> None:
    broker = Broker(redis_client)
    token = _lock(broker, "slow-consumer", ttl_s=0.2)
    wait_for_lock_expiry(redis_client, REF, GROUP)

    late = broker.commit(QueueRef(TOPIC, QUEUE), GROUP, "slow-consumer", token, 3)

    assert late.outcome is CommitOutcome.EXPIRED
    assert broker.read_offset(QueueRef(TOPIC, QUEUE), GROUP).committed == 0


def test_it_rejects_a_commit_by_a_consumer_that_never_held_the_lock(
    redis_client: redis.Redis,
) -> None:
    broker = Broker(redis_client)
    token = _lock(broker, "owner")

    forged = broker.commit(QueueRef(TOPIC, QUEUE), GROUP, "intruder", token, 3)

    assert forged.outcome is CommitOutcome.FENCED
    assert broker.read_offset(QueueRef(TOPIC, QUEUE), GROUP).committed == 0


def test_it_rejects_a_dead_letter_move_with_a_stale_token(redis_client: redis.Redis) -> None:
    broker = Broker(redis_client)
    stale = _lock(broker, "old-owner")
    assert broker.unlock(QueueRef(TOPIC, QUEUE), GROUP, "old-owner", stale)
    _lock(broker, "new-owner")

    result = broker.dead_letter(
        QueueRef(TOPIC, QUEUE), GROUP, "old-owner", stale, 4, {"offset": 3, "error": "boom"}
    )

    assert result.outcome is CommitOutcome.FENCED
    assert redis_client.xlen(keys.dead_letters(QueueRef(TOPIC, QUEUE), GROUP)) == 0
    assert broker.read_offset(QueueRef(TOPIC, QUEUE), GROUP).committed == 0


def test_it_does_not_let_a_stale_token_release_the_successors_lock(
    redis_client: redis.Redis,
) -> None:
    broker = Broker(redis_client)
    stale = _lock(broker, "consumer-a", ttl_s=0.2)
    wait_for_lock_expiry(redis_client, REF, GROUP)
    renewed = _lock(broker, "consumer-a")  # an expired lock comes back with a new token
    assert renewed > stale

    assert not broker.unlock(QueueRef(TOPIC, QUEUE), GROUP, "consumer-a", stale)
    assert _lock(broker, "consumer-b") == 0  # still held under the new token
    assert broker.unlock(QueueRef(TOPIC, QUEUE), GROUP, "consumer-a", renewed)
    assert _lock(broker, "consumer-b") > renewed
