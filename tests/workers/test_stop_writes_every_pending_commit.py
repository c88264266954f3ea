"""``EventLog.stop`` writes every commit still pending in its interval: a stopped
consumer's last position per queue is in the event stream."""

from __future__ import annotations

import redis

from lockstep.workers import events as ev
from lockstep.workers.events import EventLog
from lockstep.workers.refs import QueueRef
from tests.workers.harness import events


def test_it_writes_every_pending_commit_when_it_stops(redis_client: redis.Redis) -> None:
    log = EventLog(redis_client, flush_interval=0.02, commit_event_interval=60.0)
    log.start()
    for offset in range(1, 51):
        for queue in range(4):
            log.committed(
                QueueRef("orders", queue),
                "billing",
                9,
                "c1",
                offset * 10 + queue,
                highest_completed=offset * 10 + queue + 3,
            )

    log.stop()

    last: dict[int | None, dict[str, object]] = {}
    for event in events(redis_client, ev.OFFSET_COMMITTED):
        last[event["queue"]] = event["details"]
    assert last == {
        q: {"from_offset": 20 + q, "offset": 500 + q, "commits": 49, "highest_completed": 503 + q}
        for q in range(4)
    }
