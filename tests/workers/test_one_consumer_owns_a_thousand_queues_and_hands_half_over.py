"""One consumer process owns all 1,024 queues of a topic (on a bounded pool of threads:
docs/reading.md), consumes messages on every one of them in per-key order, and when a
second consumer joins mid-stream hands half of the queues over: no message is lost, no
key's messages are handled out of order, and each side consumed its share."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import redis

from lockstep.workers import Producer, create_topic
from lockstep.workers.hashing import queue_for_key
from tests.support import wait_until
from tests.workers.file_handlers import FILE_HANDLER, RECORD_FILE_ENV, recorded
from tests.workers.harness import (
    ConsumerProcess,
    body,
    lock_owners,
    order_violations,
    queues_by_owner,
)

pytestmark = pytest.mark.slow

QUEUES = 1024
ROUNDS_BEFORE = 2  # messages of each key before the second consumer joins
ROUNDS_AFTER = 2  # and after the queues are split


def _one_key_per_queue() -> list[str]:
    """A key for every queue of the topic (``queue_for_key`` spreads keys by hash)."""
    chosen: dict[int, str] = {}
    for n in itertools.count():
        key = f"order-{n}"
        chosen.setdefault(queue_for_key(key, QUEUES), key)
        if len(chosen) == QUEUES:
            return [chosen[q] for q in range(QUEUES)]
    raise AssertionError("unreachable")


def _send_round(producer: Producer, keys: list[str], seq: int) -> None:
    for key in keys:
        producer.send("orders", key, body(seq))


def test_one_consumer_owns_every_queue_then_hands_half_over_without_loss_or_reordering(
    redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    create_topic(redis_client, "orders", QUEUES)
    keys = _one_key_per_queue()
    records = tmp_path / "records.jsonl"
    env = {RECORD_FILE_ENV: str(records)}
    args = ["--handler", FILE_HANDLER, "--ordering", "queue"]
    first = ConsumerProcess(redis_url, "orders", "billing", "first", tmp_path, args, env).start()
    second = ConsumerProcess(redis_url, "orders", "billing", "second", tmp_path, args, env)
    producer = Producer(redis_url)
    try:
        wait_until(
            lambda: (
                list(lock_owners(redis_client, "orders", "billing", QUEUES).values())
                == ["first"] * QUEUES
            ),
            60,
            "the first consumer to own every queue",
        )
        for seq in range(ROUNDS_BEFORE):
            _send_round(producer, keys, seq)
        wait_until(
            lambda: len(recorded(records)) >= QUEUES * ROUNDS_BEFORE,
            60,
            "every queue's first messages handled",
        )

        second.start()
        seq = ROUNDS_BEFORE
        # Mid-stream: a round to every queue at a time while the group rebalances.
        owners = queues_by_owner(lock_owners(redis_client, "orders", "billing", QUEUES))
        while sorted(len(queues) for queues in owners.values()) != [QUEUES // 2] * 2:
            assert seq < 200, f"no half-and-half split after {seq} rounds: {owners.keys()}"
            _send_round(producer, keys, seq)
            seq += 1
            owners = queues_by_owner(lock_owners(redis_client, "orders", "billing", QUEUES))
        sent = seq + ROUNDS_AFTER
        for after in range(seq, sent):
            _send_round(producer, keys, after)
        wait_until(
            lambda: (
                {(r["k"], r["s"]) for r in recorded(records)}
                >= {(k, s) for k in keys for s in range(sent)}
            ),
            60,
            "every message handled",
        )
    finally:
        first.kill()
        second.kill()
        producer.close()

    handled = recorded(records)
    assert order_violations(handled, dict.fromkeys(keys, sent)) == {}
    assert {r["q"] for r in handled} == set(range(QUEUES))
    by_consumer = {c: {r["q"] for r in handled if r["c"] == c} for c in ("first", "second")}
    assert by_consumer["first"] == set(range(QUEUES)), "the first consumed every queue"
    assert by_consumer["second"] == set(owners["second"]), "the second consumed its half"
    assert "Traceback" not in first.output() + second.output()
