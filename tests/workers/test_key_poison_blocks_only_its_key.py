"""Key ordering's per-key blocking (docs/lanes.md §3): a poison message retried without bound
blocks only the later messages of its own key. The 1,000 other keys of the same queue all
complete; the committed low-water mark stays at the poison offset, while everything done
above it is committed as completed ranges (§5)."""

from __future__ import annotations

import random

import redis

from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.config import Ordering
from lockstep.workers.offset_tracker import encode_ranges
from lockstep.workers.refs import QueueRef
from tests.support import wait_until
from tests.workers.conftest import StartConsumer
from tests.workers.handlers import CALLS
from tests.workers.harness import body, events, handled, stored_offset

TOPIC, GROUP = "orders", "billing-keys"
POISON_KEY = "order-poison"
OTHER_KEYS, PER_OTHER_KEY = 1000, 2


def _send(producer: Producer) -> tuple[int, list[int], int]:
    """The poison key's seq 0, its poison seq 1, then 2,000 messages of 1,000 other keys
    with the poison key's seq 2..4 among them. Returns (poison offset, offsets of the
    poison key's later messages, next offset)."""
    producer.send(TOPIC, POISON_KEY, body(0))
    poison = producer.send(TOPIC, POISON_KEY, body(1, poison=True)).offset
    others = [f"order-{k:04d}" for k in range(OTHER_KEYS) for _ in range(PER_OTHER_KEY)]
    random.Random(1000).shuffle(others)
    sent: dict[str, int] = {}
    later: list[int] = []
    last = poison
    for i, key in enumerate(others):
        if i in (100, 900, 1700):
            later.append(producer.send(TOPIC, POISON_KEY, body(len(later) + 2)).offset)
        last = producer.send(TOPIC, key, body(sent.get(key, 0))).offset
        sent[key] = sent.get(key, 0) + 1
    return poison, later, last + 1


def test_it_lets_every_other_key_complete_while_a_poison_key_retries_forever(
    redis_client: redis.Redis, producer: Producer, start_consumer: StartConsumer
) -> None:
    create_topic(redis_client, TOPIC, 1)  # one queue: every key shares it
    poison, later, end = _send(producer)

    start_consumer(
        TOPIC,
        GROUP,
        "keys-poison",
        ordering=Ordering.KEY,
        lanes=16,
        retry_initial_ms=20,
        retry_max_ms=100,
        flush_interval_ms=50,
    )
    expected_completed = encode_ranges(set(range(poison + 1, end)) - set(later))
    wait_until(
        lambda: stored_offset(redis_client, TOPIC, GROUP, 0) == (poison, expected_completed),
        30,
        lambda: (
            f"offset hash (committed, completed) == ({poison}, "
            f"{expected_completed!r}), is "
            f"{stored_offset(redis_client, TOPIC, GROUP, 0)}"
        ),
    )
    poison_calls = lambda: int(redis_client.hget(CALLS, f"0:{poison}") or 0)  # noqa: E731
    calls_then = poison_calls()
    # Three more retries (at most 100 ms apart) while the key's later messages must wait.
    wait_until(lambda: poison_calls() >= calls_then + 3, 20, "three more poison retries")

    records = handled(redis_client)
    others = [r for r in records if r["k"] != POISON_KEY]
    assert len({(r["k"], r["s"]) for r in others}) == OTHER_KEYS * PER_OTHER_KEY
    assert [r["s"] for r in records if r["k"] == POISON_KEY] == [0]
    assert poison_calls() >= calls_then + 3, "the poison message stopped being retried"
    assert stored_offset(redis_client, TOPIC, GROUP, 0) == (poison, expected_completed)
    assert redis_client.xlen(keys.dead_letters(QueueRef(TOPIC, 0), GROUP)) == 0
    failed = [e for e in events(redis_client, "consume_failed")]
    assert failed and {e["key"] for e in failed} == {POISON_KEY}
    assert [e["details"]["reconsume_times"] for e in failed] == list(range(1, len(failed) + 1))
    assert {e["details"]["offsets"][0] for e in failed} == {poison}
    assert failed[-1]["details"]["waiting_behind"] == len(later)
