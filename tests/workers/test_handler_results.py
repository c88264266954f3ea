"""Only an explicit SUCCESS commits: a handler returning anything else (None, a typo'd
string) has failed, and its message is retried in place."""

from __future__ import annotations

import redis

from lockstep.workers import Producer, create_topic
from tests.support import wait_until
from tests.workers.conftest import StartConsumer
from tests.workers.handlers import CALLS
from tests.workers.harness import body, events, fully_committed, handled

TOPIC, GROUP = "accounts", "balances"


def test_it_retries_a_message_whose_handler_returned_none(
    redis_client: redis.Redis, producer: Producer, start_consumer: StartConsumer
) -> None:
    create_topic(redis_client, TOPIC, 1)
    producer.send(TOPIC, "acct-1", body(0))
    returns_none = producer.send(TOPIC, "acct-1", body(1, none_once=True))
    producer.send(TOPIC, "acct-1", body(2))

    start_consumer(TOPIC, GROUP, "none-returner", suspend_ms=50)
    wait_until(
        lambda: fully_committed(redis_client, TOPIC, GROUP, 1), 15, "the queue to be consumed"
    )

    assert int(redis_client.hget(CALLS, f"0:{returns_none.offset}") or 0) == 2
    assert [r["s"] for r in handled(redis_client)] == [0, 1, 2]
    failed = wait_until(
        lambda: events(redis_client, "consume_failed"), 5, "the consume_failed event"
    )
    assert len(failed) == 1
    assert failed[0]["details"]["offsets"] == [returns_none.offset]
    assert failed[0]["details"]["error"] == ("handler returned None, expected a ConsumeStatus")
