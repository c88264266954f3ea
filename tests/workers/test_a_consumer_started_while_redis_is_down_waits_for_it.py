"""`lockstep consume` started while Redis is unreachable does not die: it waits, with one
log line per back-off step, and consumes once Redis is there; a SIGTERM while it waits
ends it cleanly."""

from __future__ import annotations

import re
import time
from pathlib import Path

import redis

from lockstep.workers import Producer, create_topic
from tests.support import RestartableRedis, wait_until
from tests.workers.file_handlers import FILE_HANDLER, RECORD_FILE_ENV, recorded
from tests.workers.harness import ConsumerProcess, body, order_violations

WAITING = re.compile(r"waits for Redis \(.*\); next try in ([0-9.]+) s")


def _consumer(server: RestartableRedis, tmp_path: Path, name: str) -> ConsumerProcess:
    return ConsumerProcess(
        server.url,
        "orders",
        "billing",
        name,
        tmp_path,
        ["--handler", FILE_HANDLER, "--ordering", "key"],
        {RECORD_FILE_ENV: str(tmp_path / "records.jsonl")},
    )


def test_it_waits_with_a_line_per_backoff_step_and_consumes_when_redis_comes(
    tmp_path: Path,
) -> None:
    server = RestartableRedis(tmp_path)
    consumer = _consumer(server, tmp_path, "early").start()
    try:
        wait_until(lambda: len(WAITING.findall(consumer.output())) >= 3, 20, "three retries")
        assert consumer.running(), consumer.output()
        delays = [float(d) for d in WAITING.findall(consumer.output())]
        assert delays[:3] == [0.5, 1.0, 2.0], delays

        server.start()
        client = redis.Redis.from_url(server.url)
        create_topic(client, "orders", 4)
        producer = Producer(server.url)
        sent = {f"order-{k}": 10 for k in range(8)}
        for seq in range(10):
            for key in sent:
                producer.send("orders", key, body(seq))
        path = tmp_path / "records.jsonl"
        wait_until(lambda: len(recorded(path)) >= 80, 30, "80 messages handled")

        assert order_violations(recorded(path), sent) == {}
        assert consumer.stop() == 0
        assert "Traceback" not in consumer.output()
    finally:
        consumer.kill()
        server.stop()


def test_it_exits_cleanly_on_sigterm_while_it_waits(tmp_path: Path) -> None:
    server = RestartableRedis(tmp_path)  # never started
    consumer = _consumer(server, tmp_path, "patient").start()
    try:
        wait_until(lambda: WAITING.search(consumer.output()), 20, "the first retry line")
        started = time.monotonic()
        code = consumer.stop()
        took = time.monotonic() - started
    finally:
        consumer.kill()
    assert code == 0, consumer.output()
    assert took < 5, f"stopping took {took:.1f}s"
    assert "Traceback" not in consumer.output()
