"""Replay where a dead letter does not hold its key (queue ordering, ``after_dlq =
continue``): the message is re-published at the end of its queue with headers that link
it to its dead letter, runs once the handler is fixed, and is reported as succeeded;
replaying it again does nothing (docs/semantics.md, "Replay and discard")."""

from __future__ import annotations

import pytest
import redis

from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.config import AfterDlq, Ordering
from lockstep.workers.dead_letters import ReplayOutcome, replay
from lockstep.workers.inspect import list_dead_letters
from lockstep.workers.refs import QueueRef
from tests.support import wait_until
from tests.workers.conftest import StartConsumer
from tests.workers.handlers import fail_flag
from tests.workers.harness import body, events, fully_committed, handled

pytestmark = pytest.mark.on_cluster

TOPIC = "orders"
KEY, OTHER = "order-1", "order-2"


@pytest.mark.parametrize(
    ("ordering", "after_dlq"),
    [(Ordering.QUEUE, AfterDlq.CONTINUE), (Ordering.KEY, AfterDlq.CONTINUE)],
)
def test_it_republishes_a_replayed_dead_letter_with_headers_that_link_it(
    redis_client: redis.Redis,
    producer: Producer,
    start_consumer: StartConsumer,
    ordering: Ordering,
    after_dlq: AfterDlq,
) -> None:
    create_topic(redis_client, TOPIC, 1)
    redis_client.set(fail_flag("poison"), 1)
    producer.send(TOPIC, KEY, body(0))
    poisoned = producer.send(TOPIC, KEY, body(1, fail_while="poison")).offset
    producer.send(TOPIC, KEY, body(2))
    producer.send(TOPIC, OTHER, body(0))
    end = producer.send(TOPIC, OTHER, body(1)).offset + 1
    group = f"mailer-{ordering.value}"
    start_consumer(
        TOPIC,
        group,
        f"c-{ordering.value}",
        ordering=ordering,
        after_dlq=after_dlq,
        max_reconsume_times=1,
        suspend_ms=10,
        retry_initial_ms=10,
        flush_interval_ms=50,
    )
    wait_until(lambda: fully_committed(redis_client, TOPIC, group, 1), 15, "the dead-lettering")
    (letter,) = list_dead_letters(redis_client, TOPIC, group)
    assert letter.offset == poisoned

    redis_client.delete(fail_flag("poison"))
    replayed = replay(redis_client, QueueRef(TOPIC, 0), group, letter.id, replay_id="req-9")

    assert (replayed.outcome, replayed.offset) == (ReplayOutcome.REPUBLISHED, end)
    wait_until(lambda: events(redis_client, "replay_succeeded"), 15, "the replay to succeed")
    records = [r for r in handled(redis_client) if r["k"] == KEY]
    assert [(r["s"], r["o"]) for r in records] == [(0, 0), (2, 2), (1, end)]
    assert records[-1]["h"] == {
        "lockstep-replay-of": letter.id,
        "lockstep-replay-id": "req-9",
        "lockstep-original-offset": poisoned,
    }
    (succeeded,) = events(redis_client, "replay_succeeded")
    assert (succeeded["group"], succeeded["key"]) == (group, KEY)
    assert succeeded["details"] == {
        "dlq_id": letter.id,
        "replay_id": "req-9",
        "original_offset": poisoned,
        "offset": end,
    }
    assert redis_client.xlen(keys.dead_letters(QueueRef(TOPIC, 0), group)) == 0
    again = replay(redis_client, QueueRef(TOPIC, 0), group, letter.id, replay_id="req-9")
    assert again.outcome is ReplayOutcome.MISSING
    assert redis_client.xlen(keys.stream(QueueRef(TOPIC, 0))) == end + 1  # published once
