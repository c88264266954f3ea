"""SIGTERM to a consumer whose Redis went away while it consumed: it exits with code 0
within the shutdown timeout, without a traceback; what it could not write is redelivered
(its locks expire), so a consumer started after Redis returns handles every message."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis

from lockstep.workers import Producer, create_topic
from tests.support import RestartableRedis, wait_until
from tests.workers.file_handlers import FILE_HANDLER, HANDLER_MS_ENV, RECORD_FILE_ENV, recorded
from tests.workers.harness import ConsumerProcess, body, order_violations

pytestmark = pytest.mark.slow

SHUTDOWN_TIMEOUT_S = 3
KEYS = [f"order-{k}" for k in range(8)]


def test_it_exits_zero_within_the_shutdown_timeout_and_loses_nothing(tmp_path: Path) -> None:
    server = RestartableRedis(tmp_path)
    server.start()
    client = redis.Redis.from_url(server.url)
    create_topic(client, "orders", 4)
    records = tmp_path / "records.jsonl"
    env = {
        RECORD_FILE_ENV: str(records),
        HANDLER_MS_ENV: "5",
        "LOCKSTEP_SHUTDOWN_TIMEOUT": str(SHUTDOWN_TIMEOUT_S),
    }
    args = ["--handler", FILE_HANDLER, "--ordering", "key"]
    first = ConsumerProcess(server.url, "orders", "billing", "first", tmp_path, args, env).start()
    producer = Producer(server.url)
    for seq in range(50):
        for key in KEYS:
            producer.send("orders", key, body(seq))
    second: ConsumerProcess | None = None
    try:
        wait_until(lambda: len(recorded(records)) > 40, 30, "consumption to start")
        server.stop()
        wait_until(
            lambda: "Redis is unreachable" in first.output(), 30, "the consumer to meet the outage"
        )
        asked = time.monotonic()
        code = first.stop(timeout=SHUTDOWN_TIMEOUT_S + 10)
        took = time.monotonic() - asked

        server.start()
        second = ConsumerProcess(server.url, "orders", "billing", "second", tmp_path, args, env)
        second.start()
        wait_until(
            lambda: len({(r["q"], r["o"]) for r in recorded(records)}) >= 50 * len(KEYS),
            60,
            "every message handled after the restart",
        )
    finally:
        first.kill()
        if second is not None:
            second.kill()
        producer.close()
        server.stop()

    print(f"stop during the outage took {took:.2f}s")
    assert code == 0, first.output()[-3000:]
    # The timeout bounds the stop; starting Python's exit and the signal round trip add a bit.
    assert took < SHUTDOWN_TIMEOUT_S + 2, f"the stop took {took:.1f}s"
    assert "Traceback" not in first.output(), first.output()[-3000:]
    assert order_violations(recorded(records), dict.fromkeys(KEYS, 50)) == {}
