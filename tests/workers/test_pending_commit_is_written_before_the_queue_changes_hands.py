"""A commit still pending in its interval is written as soon as the queue changes hands:
before the event that ends the worker's ownership (release, loss, a refused renewal or
fenced write), and before the first commit under a new token."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from lockstep.workers import events as ev
from lockstep.workers.events import EventLog
from lockstep.workers.refs import QueueRef
from tests.workers.harness import events

QUEUE = QueueRef("orders", 3)


def _written(log: EventLog, client: redis.Redis) -> list[dict[str, Any]]:
    log.flush()
    return events(client)


def _summary(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (
            e["type"],
            e["queue"],
            e["token"],
            e["details"].get("from_offset"),
            e["details"].get("offset"),
        )
        for e in events
    ]


@pytest.mark.parametrize(
    "ending", [ev.LOCK_RELEASED, ev.LOCK_LOST, ev.LOCK_RENEW_FAILED, ev.FENCING_REJECTED]
)
def test_it_writes_the_pending_commit_before_the_event_that_ends_the_ownership(
    redis_client: redis.Redis, ending: str
) -> None:
    log = EventLog(redis_client, commit_event_interval=60.0)
    for offset in range(10, 15):
        log.committed(QUEUE, "mailer", 4, "c1", offset)
    log.committed(QueueRef("orders", 5), "mailer", 2, "c1", 100)
    log.committed(QueueRef("orders", 5), "mailer", 2, "c1", 101)

    log.emit(ending, topic="orders", group="mailer", queue=3, token=4, consumer="c1")

    assert _summary(_written(log, redis_client)) == [
        (ev.OFFSET_COMMITTED, 3, 4, 10, 10),
        (ev.OFFSET_COMMITTED, 5, 2, 100, 100),
        (ev.OFFSET_COMMITTED, 3, 4, 11, 14),
        (ending, 3, 4, None, None),
    ]  # queue 5's second commit is still pending: its lock was not released


def test_it_writes_the_old_tokens_pending_commit_when_the_token_changes(
    redis_client: redis.Redis,
) -> None:
    log = EventLog(redis_client, commit_event_interval=60.0)
    for offset in (10, 11, 12):
        log.committed(QUEUE, "mailer", 4, "c1", offset)

    log.committed(QUEUE, "mailer", 5, "c2", 13)

    assert _summary(_written(log, redis_client)) == [
        (ev.OFFSET_COMMITTED, 3, 4, 10, 10),
        (ev.OFFSET_COMMITTED, 3, 4, 11, 12),
        (ev.OFFSET_COMMITTED, 3, 5, 13, 13),
    ]
