"""docs/semantics.md §10 under key ordering: two consumer processes with 64 lanes each share 12,000
messages over 400 keys on 8 queues, with random handler delays (so lanes finish out of
offset order all the time), while one is killed with SIGKILL and a third joins (a
rebalance hands queues over while they are being consumed). Afterwards every message was
handled, per key the first successful handlings are in produce order (duplicates allowed,
reordering not), and no queue was ever handled by two consumers at once."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import pytest
import redis

from lockstep.workers import Producer, create_topic
from tests.support import wait_until
from tests.workers.conftest import SpawnConsumer
from tests.workers.harness import (
    body,
    fully_committed,
    handled,
    handled_count,
    lock_owners,
    order_violations,
    overlapping_handlings,
    registered,
)

pytestmark = [pytest.mark.slow, pytest.mark.on_cluster]

TOPIC, GROUP, QUEUES = "orders", "ledger-keys", 8
KEYS, PER_KEY = 400, 30  # 12,000 messages
# ~1,200 messages/s for ~10 s: the kill and the join both happen with a backlog.
SEND_BATCH, SEND_BATCH_INTERVAL_S = 60, 0.05
KEY_ARGS = (
    "--ordering",
    "key",
    "--lanes",
    "64",
    "--retry-initial-ms",
    "50",
    "--flush-interval-ms",
    "100",
)
# Up to 20 ms per message: messages of different keys in one queue finish in any order.
HANDLER_ENV = {"LOCKSTEP_TEST_MAX_DELAY_MS": "20"}


def _produce(producer: Producer, sends: list[str], sent: Counter[str]) -> None:
    for i, key in enumerate(sends):
        producer.send(TOPIC, key, body(sent[key]))
        sent[key] += 1
        if i % SEND_BATCH == SEND_BATCH - 1:
            time.sleep(SEND_BATCH_INTERVAL_S)


def test_it_keeps_every_key_in_order_with_64_lanes_through_a_kill_and_a_join(
    redis_client: redis.Redis, producer: Producer, spawn_consumer: SpawnConsumer
) -> None:
    create_topic(redis_client, TOPIC, QUEUES)
    first = {
        cid: spawn_consumer(TOPIC, GROUP, cid, *KEY_ARGS, env=HANDLER_ENV)
        for cid in ("ko-a", "ko-b")
    }
    wait_until(
        lambda: (
            len(lock_owners(redis_client, TOPIC, GROUP, QUEUES)) == QUEUES
            and registered(redis_client, GROUP, TOPIC) == set(first)
        ),
        30,
        "two consumers to hold all queues",
    )
    sends = [f"order-{k:03d}" for k in range(KEYS) for _ in range(PER_KEY)]
    random.Random(12_000).shuffle(sends)
    sent: Counter[str] = Counter()
    sending = threading.Thread(target=_produce, args=(producer, sends, sent))
    sending.start()
    try:
        wait_until(lambda: handled_count(redis_client) >= 3000, 60, "3,000 handlings")
        first["ko-a"].kill()
        wait_until(lambda: handled_count(redis_client) >= 5000, 60, "5,000 handlings")
        joiner = spawn_consumer(TOPIC, GROUP, "ko-c", *KEY_ARGS, env=HANDLER_ENV)
        wait_until(
            lambda: "ko-c" in lock_owners(redis_client, TOPIC, GROUP, QUEUES).values(),
            30,
            "ko-c to be granted queues",
        )
        backlog_when_joined = len(sends) - handled_count(redis_client)
    finally:
        sending.join()
    wait_until(
        lambda: fully_committed(redis_client, TOPIC, GROUP, QUEUES),
        60,
        "every queue to be committed to its end",
    )
    for p in (first["ko-b"], joiner):
        assert p.stop() == 0, p.output()[-3000:]

    records = handled(redis_client)
    assert sum(sent.values()) == KEYS * PER_KEY
    assert order_violations(records, dict(sent)) == {}
    assert overlapping_handlings(records) == []
    assert backlog_when_joined > 0, "the run ended before ko-c joined"
    handlers = Counter(r["c"] for r in records)
    assert set(handlers) == {"ko-a", "ko-b", "ko-c"}, handlers
    print(f"{len(records)} handlings ({len(records) - len(sends)} duplicates) by {dict(handlers)}")
