"""A Redis outage while consumers run: each process logs one warning when it starts and
one when it ends, no traceback, and no event that blames the handler; consumption goes on
afterwards with every message handled in per-key order (queue and key ordering)."""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

import pytest
import redis

from lockstep.workers import Producer, create_topic
from tests.support import RestartableRedis, wait_until
from tests.workers.file_handlers import (
    FILE_HANDLER,
    HANDLER_MS_ENV,
    RECORD_FILE_ENV,
    recorded,
)
from tests.workers.harness import FAST, ConsumerProcess, body, events, order_violations

pytestmark = pytest.mark.slow

UNREACHABLE = "Redis is unreachable"
BACK = "Redis is reachable again"
KEYS = [f"acct-{k}" for k in range(12)]


def _send(producer: Producer, first: int, count: int) -> None:
    for seq in range(first, first + count):
        for key in KEYS:
            producer.send("ledger", key, body(seq))


def _handled(records: Path, group: str, at_least: int) -> bool:
    """The group handled at least this many distinct messages."""
    return len({(r["q"], r["o"]) for r in recorded(records, group)}) >= at_least


# Queue ordering's commit interval: the default, and a commit after every batch.
@pytest.mark.parametrize("commit_interval_ms", ["200", "0"], ids=["interval", "every-batch"])
def test_it_logs_one_warning_each_way_and_no_handler_error(
    tmp_path: Path, commit_interval_ms: str
) -> None:
    server = RestartableRedis(tmp_path)
    server.start()
    client = redis.Redis.from_url(server.url)
    create_topic(client, "ledger", 4)
    records = tmp_path / "records.jsonl"
    env = {RECORD_FILE_ENV: str(records), HANDLER_MS_ENV: "2"}
    consumers = [
        ConsumerProcess(
            server.url, "ledger", group, group, tmp_path, ["--handler", FILE_HANDLER, *args], env
        ).start()
        for group, args in (
            ("by-queue", ["--commit-interval-ms", commit_interval_ms]),
            ("by-key", ["--ordering", "key"]),
        )
    ]
    producer = Producer(server.url)
    try:
        _send(producer, 0, 40)
        for group in ("by-queue", "by-key"):
            wait_until(partial(_handled, records, group, 50), 30, f"{group} to consume")

        server.stop()
        # The outage is the scenario: longer than the locks' TTL, so every lock has expired
        # when Redis is back. Their last renewal came before the stop, so just over one
        # TTL is enough (the server's start only adds to it).
        time.sleep(FAST.lock_ttl_s + 0.2)
        server.start()

        _send(producer, 40, 20)
        for group in ("by-queue", "by-key"):
            wait_until(
                partial(_handled, records, group, 60 * len(KEYS)),
                60,
                f"{group} to handle every message",
            )
            violations = order_violations(recorded(records, group), dict.fromkeys(KEYS, 60))
            assert violations == {}, group
        for consumer in consumers:
            assert consumer.stop() == 0
    finally:
        for consumer in consumers:
            consumer.kill()
        producer.close()

    for consumer in consumers:
        output = consumer.output()
        assert output.count(UNREACHABLE) == 1, output[-3000:]
        assert output.count(BACK) == 1, output[-3000:]
        assert "Traceback" not in output, output[-3000:]
    blamed = events(client, "handler_error", "consume_failed")
    assert blamed == []
    server.stop()
