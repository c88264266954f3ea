"""Fleets of queues made straight in Redis for the dashboard's fleet tests: topics, groups
and max offsets (so lag) without producing a message, so a few thousand (topic, group,
queue) pairs take a few pipelined round trips."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import redis

from lockstep.dashboard.web.store.models import Event
from lockstep.workers import create_topic, keys
from lockstep.workers import events as ev
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group


def make_fleet(
    client: redis.Redis,
    topics: list[str],
    queues: int,
    groups: list[str],
    max_offset: Callable[[str, int], int] = lambda topic, queue: 0,
) -> int:
    """Create ``topics`` of ``queues`` queues each, register ``groups`` on every one and
    set each queue's max offset (nothing consumed: a queue's lag is its max offset);
    returns the number of (topic, group, queue) pairs."""
    for topic in topics:
        create_topic(client, topic, queues)
        for group in groups:
            register_group(client, topic, group)
        pipe = client.pipeline(transaction=False)
        for queue in range(queues):
            pipe.set(keys.sequence(QueueRef(topic, queue)), max_offset(topic, queue))
        pipe.execute()
    return len(topics) * queues * len(groups)


def set_max_offset(client: redis.Redis, ref: QueueRef, value: int) -> None:
    client.set(keys.sequence(ref), value)


def commit_event(ref: QueueRef, group: str) -> Event:
    """An unsaved ``offset_committed`` event of ``group`` on ``ref``, as the ingester hands
    the publisher what it stored (``Publisher.record``)."""
    return Event(
        stream_id="1-1",
        type=ev.OFFSET_COMMITTED,
        ts=datetime.now(tz=UTC),
        topic=ref.topic,
        group=group,
        queue=ref.queue,
        details={"offset": 0},
    )
