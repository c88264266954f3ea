"""Bulk replay (``workers.dead_letters.replay_many``): dead letters of many keys go back in
each key's original offset order whatever order they were asked in, at a bounded rate,
and a cancel midway leaves the rest dead and untouched."""

from __future__ import annotations

import random
import time

import pytest
import redis

from lockstep.workers import create_topic, keys
from lockstep.workers.broker import Broker, dead_letter_entry
from lockstep.workers.config import Subscription
from lockstep.workers.dead_letters import ReplayOutcome, Target, replay_many
from lockstep.workers.inspect import list_dead_letters
from lockstep.workers.message import Message, decode_entry
from lockstep.workers.redis_types import entries
from lockstep.workers.refs import QueueRef

GROUP = "mailer"
SUB = Subscription("orders", GROUP, "h.h")  # queue ordering: replays are re-published
KEYS, PER_KEY = 50, 10


def _dead_letters(client: redis.Redis, ref: QueueRef) -> list[Target]:
    """500 dead letters, 10 per key, as the queue-ordering worker writes them."""
    broker = Broker(client)
    (grant,) = broker.lock_batch([ref], GROUP, "c1", 60.0)
    targets = []
    for offset in range(KEYS * PER_KEY):
        key = f"order-{offset % KEYS}"
        message = Message(ref.topic, ref.queue, offset, key, str(offset).encode(), {}, 1.0)
        entry = dead_letter_entry(message, SUB, "RuntimeError: declined")
        result = broker.dead_letter(ref, GROUP, "c1", grant.token, offset + 1, entry)
        assert result.ok
        targets.append(Target(ref, GROUP, result.dlq_id, offset))
    client.set(keys.sequence(ref), KEYS * PER_KEY)
    return targets


def _republished(client: redis.Redis, ref: QueueRef) -> list[Message]:
    return [decode_entry(ref, i, f) for i, f in entries(client.xrange(keys.stream(ref)))]


@pytest.mark.on_cluster
def test_it_replays_each_keys_dead_letters_in_their_original_order(
    redis_client: redis.Redis,
) -> None:
    create_topic(redis_client, "orders", 1)
    ref = QueueRef("orders", 0)
    targets = _dead_letters(redis_client, ref)
    random.Random(7).shuffle(targets)  # as a selection may list them
    outcomes: list[ReplayOutcome] = []

    attempted = replay_many(
        redis_client,
        targets,
        replay_id="bulk-1",
        on_outcome=lambda _t, r: outcomes.append(r.outcome),
    )

    assert attempted == len(outcomes) == KEYS * PER_KEY
    assert set(outcomes) == {ReplayOutcome.REPUBLISHED}
    messages = _republished(redis_client, ref)
    for k in range(KEYS):
        originals = [
            int(m.headers["lockstep-original-offset"]) for m in messages if m.key == f"order-{k}"
        ]
        assert originals == sorted(originals) and len(originals) == PER_KEY
    assert {m.headers["lockstep-replay-id"] for m in messages} == {"bulk-1"}
    assert list_dead_letters(redis_client, "orders", GROUP) == []


@pytest.mark.on_cluster
def test_it_stops_at_a_cancel_and_leaves_the_rest_dead(redis_client: redis.Redis) -> None:
    create_topic(redis_client, "orders", 1)
    ref = QueueRef("orders", 0)
    targets = _dead_letters(redis_client, ref)
    done: list[Target] = []

    attempted = replay_many(
        redis_client,
        targets,
        replay_id="bulk-2",
        cancelled=lambda: len(done) >= 120,
        on_outcome=lambda t, _r: done.append(t),
    )

    assert attempted == 120
    left = list_dead_letters(redis_client, "orders", GROUP)
    assert len(left) == KEYS * PER_KEY - 120
    assert {d.id for d in left}.isdisjoint({t.dlq_id for t in done})
    assert len(_republished(redis_client, ref)) == 120


def test_it_replays_no_faster_than_its_rate(redis_client: redis.Redis) -> None:
    create_topic(redis_client, "orders", 1)
    ref = QueueRef("orders", 0)
    targets = _dead_letters(redis_client, ref)[:11]
    started = time.monotonic()

    replay_many(redis_client, targets, replay_id="slow", per_second=50)

    assert time.monotonic() - started >= 10 / 50  # 11 steps: 10 intervals of 20 ms
