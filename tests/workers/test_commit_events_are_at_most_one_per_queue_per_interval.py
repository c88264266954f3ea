"""Offset commits are recorded as at most one ``offset_committed`` event per (queue,
group) per commit-event interval, and together the events still account for every
commit: each one starts where the previous one ended, and the last carries the last
offset."""

from __future__ import annotations

import itertools
import time
from typing import Any

import redis

from lockstep.workers import events as ev
from lockstep.workers.events import EventLog
from lockstep.workers.refs import QueueRef
from tests.support import wait_until
from tests.workers.harness import events

FLUSH_S = 0.02
INTERVAL_S = 0.3
COMMITS = 300  # one every 5 ms: about 1.5 s, five intervals


def _commit_events(client: redis.Redis) -> dict[tuple[int | None, str], list[dict[str, Any]]]:
    out: dict[tuple[int | None, str], list[dict[str, Any]]] = {}
    for event in events(client, ev.OFFSET_COMMITTED):
        out.setdefault((event["queue"], event["group"]), []).append(event)
    return out


def _written_ms(event: dict[str, Any]) -> int:
    return int(event["id"].split("-")[0])


def test_it_writes_at_most_one_commit_event_per_queue_and_group_per_interval(
    redis_client: redis.Redis,
) -> None:
    log = EventLog(redis_client, flush_interval=FLUSH_S, commit_event_interval=INTERVAL_S)
    log.start()
    started = time.monotonic()
    for offset in range(1, COMMITS + 1):
        for queue, group in itertools.product((0, 1), ("mailer", "billing")):
            log.committed(QueueRef("orders", queue), group, 7, "c1", offset)
        time.sleep(0.005)
    elapsed = time.monotonic() - started
    log.stop()

    written = _commit_events(redis_client)
    assert sorted(written) == [(0, "billing"), (0, "mailer"), (1, "billing"), (1, "mailer")]
    for queue_events in written.values():
        # The leading event, then one per interval that ended, then the one stop wrote.
        assert len(queue_events) <= elapsed / INTERVAL_S + 2
        gaps = [_written_ms(b) - _written_ms(a) for a, b in itertools.pairwise(queue_events[:-1])]
        assert min(gaps) >= (INTERVAL_S - FLUSH_S) * 1000 - 20
        assert queue_events[0]["details"]["from_offset"] == 1
        assert queue_events[-1]["details"]["offset"] == COMMITS
        assert sum(e["details"]["commits"] for e in queue_events) == COMMITS
        for before, after in itertools.pairwise(queue_events):
            assert after["details"]["from_offset"] == before["details"]["offset"] + 1
        assert {(e["token"], e["consumer"]) for e in queue_events} == {(7, "c1")}


def test_it_writes_the_first_commit_after_a_quiet_interval_at_the_next_flush(
    redis_client: redis.Redis,
) -> None:
    log = EventLog(redis_client, flush_interval=FLUSH_S, commit_event_interval=60.0)
    log.start()
    try:
        log.committed(QueueRef("orders", 0), "mailer", 1, "c1", 41)
        log.committed(QueueRef("orders", 0), "mailer", 1, "c1", 42)
        wait_until(lambda: _commit_events(redis_client), 5, "the first commit event")
        # Five more flushes: a second event (wrongly for 42) would be written by then.
        time.sleep(5 * FLUSH_S)

        written = _commit_events(redis_client)
    finally:
        log.stop()

    assert [e["details"] for e in written[(0, "mailer")]] == [
        {"from_offset": 41, "offset": 41, "commits": 1}
    ]
