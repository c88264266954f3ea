"""SIGTERM is a graceful stop: the consumer finishes the messages in progress, writes their
offsets, releases its locks, leaves its group and exits within the shutdown timeout; the
other consumer owns the queues within 2 s, long before the locks would have expired."""

from __future__ import annotations

import time
from pathlib import Path

import redis

from lockstep.workers import Producer, create_topic
from tests.support import wait_until
from tests.workers.file_handlers import FILE_HANDLER, HANDLER_MS_ENV, RECORD_FILE_ENV, recorded
from tests.workers.harness import (
    ConsumerProcess,
    body,
    events,
    handlings_per_offset,
    lock_owners,
    order_violations,
    queues_by_owner,
)

QUEUES = 4
KEYS = [f"order-{k}" for k in range(16)]
PER_KEY = 60
# Locks that would take 30 s to expire and members 10 s to be noticed gone: a takeover
# within 2 s can only come from the stopping consumer's release and leave.
SLOW_EXPIRY = {
    "LOCKSTEP_LOCK_TTL": "30",
    "LOCKSTEP_CLIENT_LOCK_EXPIRY": "20",
    "LOCKSTEP_LOCK_RENEW_INTERVAL": "2",
    "LOCKSTEP_HEARTBEAT_TIMEOUT": "10",
    "LOCKSTEP_REBALANCE_INTERVAL": "60",
    "LOCKSTEP_SHUTDOWN_TIMEOUT": "5",
    HANDLER_MS_ENV: "5",
}


def test_it_releases_every_queue_and_the_survivor_takes_them_within_two_seconds(
    redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    create_topic(redis_client, "orders", QUEUES)
    records = tmp_path / "records.jsonl"
    env = {**SLOW_EXPIRY, RECORD_FILE_ENV: str(records)}
    args = ["--handler", FILE_HANDLER, "--ordering", "key", "--lanes", "4"]
    leaving, staying = (
        ConsumerProcess(redis_url, "orders", "billing", name, tmp_path, args, env).start()
        for name in ("leaving", "staying")
    )
    producer = Producer(redis_url)
    try:
        for seq in range(PER_KEY):
            for key in KEYS:
                producer.send("orders", key, body(seq))
        wait_until(
            lambda: (
                sorted(queues_by_owner(lock_owners(redis_client, "orders", "billing", QUEUES)))
                == ["leaving", "staying"]
            ),
            30,
            "both consumers to own queues",
        )
        wait_until(lambda: len(recorded(records)) > 50, 30, "consumption to start")
        held = queues_by_owner(lock_owners(redis_client, "orders", "billing", QUEUES))["leaving"]

        asked = time.monotonic()
        code = leaving.stop()
        exited = time.monotonic()
        owners = wait_until(
            lambda: (
                (o := lock_owners(redis_client, "orders", "billing", QUEUES))
                and set(o.values()) == {"staying"}
                and len(o) == QUEUES
                and o
            ),
            10,
            "the survivor to own every queue",
            interval=0.02,
        )
        taken_over = time.monotonic()
        wait_until(
            lambda: len(set(handlings_per_offset(recorded(records)))) >= len(KEYS) * PER_KEY,
            60,
            "every message handled",
        )
    finally:
        leaving.kill()
        staying.kill()
        producer.close()

    print(f"stop took {exited - asked:.2f}s; takeover {taken_over - exited:.2f}s after the exit")
    assert code == 0, leaving.output()[-3000:]
    assert exited - asked < 5 + 3, f"the stop took {exited - asked:.1f}s"
    assert taken_over - exited < 2.0, f"takeover {taken_over - exited:.2f}s after the exit"
    assert len(owners) == QUEUES
    released = {
        e["queue"]
        for e in events(redis_client, "lock_released")
        if e["consumer"] == "leaving" and e["details"].get("reason") == "shutdown"
    }
    assert released == set(held)
    assert order_violations(recorded(records), dict.fromkeys(KEYS, PER_KEY)) == {}
    assert "Traceback" not in leaving.output()
