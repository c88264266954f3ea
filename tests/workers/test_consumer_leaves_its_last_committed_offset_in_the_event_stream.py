"""A consumer whose commit-event interval is longer than its whole run still leaves, per
queue, one commit event per interval and its last committed offset in the event stream
once it stops, under queue and key ordering: the offsets in Redis and in the stream
agree."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from lockstep.workers import Consumer, Producer, Subscription, create_topic
from lockstep.workers import events as ev
from lockstep.workers.config import Ordering
from tests.support import wait_until
from tests.workers.harness import FAST, RECORD_HANDLER, events, fully_committed, stored_offset

TOPIC, GROUP, QUEUES, MESSAGES = "ledger", "posting", 2, 60


def _commit_events(client: redis.Redis) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for event in events(client, ev.OFFSET_COMMITTED):
        if event["group"] == GROUP:
            out.setdefault(int(event["queue"]), []).append(event)
    return out


@pytest.mark.parametrize("ordering", [Ordering.QUEUE, Ordering.KEY])
def test_it_leaves_the_last_committed_offset_of_every_queue_in_the_event_stream(
    redis_client: redis.Redis,
    redis_url: str,
    producer: Producer,
    monkeypatch: pytest.MonkeyPatch,
    ordering: Ordering,
) -> None:
    monkeypatch.setenv("LOCKSTEP_COMMIT_EVENT_INTERVAL", "600")
    create_topic(redis_client, TOPIC, QUEUES)
    sub = Subscription(
        topic=TOPIC, group=GROUP, handler=RECORD_HANDLER, ordering=ordering, flush_interval_ms=50
    )
    consumer = Consumer(redis_url, [sub], timings=FAST, consumer_id="poster")
    consumer.start()
    try:
        for i in range(MESSAGES):
            producer.send(TOPIC, f"acct-{i % 7}", b"{}")
        wait_until(lambda: fully_committed(redis_client, TOPIC, GROUP, QUEUES), 20, "every commit")
    finally:
        consumer.stop()

    written = _commit_events(redis_client)
    assert sorted(written) == list(range(QUEUES))
    for queue, queue_events in written.items():
        committed, _ = stored_offset(redis_client, TOPIC, GROUP, queue)
        assert committed > 0
        # The first commit, then one for all the rest at the stop.
        assert len(queue_events) == 2
        assert queue_events[-1]["details"]["offset"] == committed
        assert queue_events[1]["details"]["from_offset"] >= queue_events[0]["details"]["offset"]
