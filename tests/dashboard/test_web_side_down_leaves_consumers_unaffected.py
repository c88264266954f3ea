"""The web side (daphne and the ingester) stops for a while under load. The consumers do
not notice: they commit at least as fast as while it ran, with no errors; and when the web
side returns, every event they emitted meanwhile is stored, once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis

from bench.common import ConsumerProcess, committed_total, load_topic
from lockstep.workers.events import count_events
from tests.dashboard.helpers import wait_until
from tests.dashboard.web_processes import SLEEP_5MS, WebSide, stream_ids

pytestmark = pytest.mark.slow

QUEUES = 8
BACKLOG = 40_000  # more than the consumer can finish during the test (~1,500 msg/s)
WINDOW_S = 4.0


def _commit_rate(client: redis.Redis, seconds: float) -> float:
    before = committed_total(client, "orders", "mailer", QUEUES)
    time.sleep(seconds)
    return (committed_total(client, "orders", "mailer", QUEUES) - before) / seconds


def test_it_keeps_consumers_at_full_speed_and_stores_their_events_afterwards(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    web = WebSide(redis_url, tmp_path)
    web.manage("migrate", "--noinput")
    load_topic(redis_client, "orders", QUEUES, BACKLOG, key_count=500)
    web.start("web")
    web.start("ingester")
    # A commit event every 0.1 s per queue (not the default 5 s): the test counts the
    # events emitted while the web side is down, so they must come often.
    consumer = ConsumerProcess(
        redis_url,
        "orders",
        "mailer",
        ["--handler", SLEEP_5MS],
        env={"LOCKSTEP_COMMIT_EVENT_INTERVAL": "0.1"},
    )
    try:
        wait_until(
            lambda: committed_total(redis_client, "orders", "mailer", QUEUES),
            lambda n: n > 500,
            timeout=30,
        )
        with_web = _commit_rate(redis_client, WINDOW_S)
        web.stop("ingester")
        web.stop("web")
        stopped_at = count_events(redis_client)
        without_web = _commit_rate(redis_client, WINDOW_S)
        emitted_while_down = count_events(redis_client) - stopped_at
        consumer.sample()  # raises if the consumer died
        web.start("web")
        web.start("ingester")
        committed = committed_total(redis_client, "orders", "mailer", QUEUES)
        assert committed < BACKLOG, "the consumer was busy all along"
    finally:
        errors = consumer.stderr(limit=20_000)
        consumer.stop()

    total = count_events(redis_client)
    stored = wait_until(web.stored_count, lambda n: n >= total, timeout=30)
    web.stop_all()

    assert without_web >= 0.9 * with_web, (with_web, without_web)
    assert with_web > 300, "the consumer was really consuming"
    assert "Traceback" not in errors and "ERROR" not in errors, errors
    assert emitted_while_down > 20, "the consumer kept emitting events meanwhile"
    assert stored == total
    assert sorted(web.stored_ids()) == sorted(stream_ids(redis_client))
