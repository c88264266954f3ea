"""A dead letter tells its story (docs/semantics.md): every attempt's error with the end of
its traceback, and how its subscription consumes (which decides how a replay keeps
order), under both orderings."""

from __future__ import annotations

import pytest
import redis

from lockstep.workers import Producer, create_topic
from lockstep.workers.config import AfterDlq, Ordering
from lockstep.workers.inspect import list_dead_letters
from tests.support import wait_until
from tests.workers.conftest import StartConsumer
from tests.workers.handlers import fail_flag
from tests.workers.harness import body, fully_committed

TOPIC = "payments"


@pytest.mark.parametrize(
    ("ordering", "after_dlq"),
    [(Ordering.QUEUE, AfterDlq.CONTINUE), (Ordering.KEY, AfterDlq.HOLD)],
)
def test_it_records_each_attempt_with_its_traceback_and_how_the_group_consumes(
    redis_client: redis.Redis,
    producer: Producer,
    start_consumer: StartConsumer,
    ordering: Ordering,
    after_dlq: AfterDlq,
) -> None:
    create_topic(redis_client, TOPIC, 1)
    redis_client.set(fail_flag("card"), 1)
    producer.send(TOPIC, "order-7", body(0, raise_while="card"))
    group = f"ledger-{ordering.value}"

    start_consumer(
        TOPIC,
        group,
        f"c-{ordering.value}",
        ordering=ordering,
        after_dlq=after_dlq,
        max_reconsume_times=2,
        suspend_ms=10,
        retry_initial_ms=10,
        flush_interval_ms=50,
    )
    wait_until(lambda: fully_committed(redis_client, TOPIC, group, 1), 15, "the dead-lettering")

    (letter,) = list_dead_letters(redis_client, TOPIC, group)
    assert (letter.ordering, letter.after_dlq) == (ordering.value, after_dlq.value)
    assert len(letter.attempts) == 3  # the first call and two retries
    assert [a["error"] for a in letter.attempts] == ["RuntimeError: card declined for order-7"] * 3
    for attempt in letter.attempts:
        assert attempt["traceback"].startswith("Traceback (most recent call last):")
        assert 'raise RuntimeError(f"card declined for {message.key}")' in attempt["traceback"]
    times = [a["at_ms"] for a in letter.attempts]
    assert times == sorted(times) and times[-1] <= letter.dead_at_ms
