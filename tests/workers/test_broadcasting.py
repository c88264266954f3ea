"""Broadcasting: every consumer of the group gets every queue and every message, in order,
with its own offsets and no locks."""

from __future__ import annotations

import random
from collections import Counter

import redis

from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.refs import QueueRef
from tests.support import wait_until
from tests.workers.conftest import SpawnConsumer
from tests.workers.harness import (
    body,
    consumer_card,
    events,
    handled,
    handled_count,
    order_violations,
)

TOPIC, GROUP, QUEUES = "prices", "caches", 4
KEYS, PER_KEY = 20, 20


def test_it_delivers_every_message_once_and_in_order_to_each_consumer(
    redis_client: redis.Redis, producer: Producer, spawn_consumer: SpawnConsumer
) -> None:
    create_topic(redis_client, TOPIC, QUEUES)
    consumers = [
        spawn_consumer(
            TOPIC,
            GROUP,
            f"cache-{name}",
            "--model",
            "broadcasting",
            "--consumer-name",
            name,
            env={"LOCKSTEP_TEST_MAX_DELAY_MS": "2"},
        )
        for name in ("east", "west")
    ]
    wait_until(
        lambda: all(consumer_card(redis_client, c.consumer_id) for c in consumers),
        30,
        "both consumers to start",
    )
    sends = [f"sku-{k}" for k in range(KEYS) for _ in range(PER_KEY)]
    random.Random(7).shuffle(sends)
    seq: Counter[str] = Counter()
    for key in sends:
        producer.send(TOPIC, key, body(seq[key]))
        seq[key] += 1

    wait_until(
        lambda: handled_count(redis_client) >= 2 * len(sends),
        60,
        "both consumers to handle every message",
    )
    for c in consumers:
        assert c.stop() == 0, c.output()

    records = handled(redis_client)
    for c in consumers:
        mine = [r for r in records if r["c"] == c.consumer_id]
        assert len(mine) == len(sends), f"{c.consumer_id} handled {len(mine)}"
        assert len({(r["k"], r["s"]) for r in mine}) == len(sends), "a duplicate"
        assert order_violations(mine, dict(seq)) == {}
        assert all(r["tok"] == 0 for r in mine), "broadcasting takes no locks"
    assert len(records) == 2 * len(sends)
    for name in ("east", "west"):
        offsets = [
            int(
                redis_client.hget(
                    keys.offset(QueueRef(TOPIC, q), f"{GROUP}%bc%{name}"), "committed"
                )
                or 0
            )
            for q in range(QUEUES)
        ]
        assert sum(offsets) == len(sends)
    assert events(redis_client, "lock_acquired") == []
