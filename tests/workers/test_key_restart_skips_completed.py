"""Commits that remember completed work above the low-water mark (docs/lanes.md §5): while one
failing key holds a queue's committed offset back, the offsets completed above it are
committed with it, and the consumer that takes over after a restart skips them instead of
handling them again. After SIGKILL only what completed since the last flush may run twice;
after a graceful stop, nothing."""

from __future__ import annotations

from collections import Counter

import redis

from lockstep.workers import Producer, create_topic
from lockstep.workers.offset_tracker import decode_ranges
from tests.support import wait_until
from tests.workers.conftest import SpawnConsumer
from tests.workers.handlers import fail_flag
from tests.workers.harness import (
    ConsumerProcess,
    body,
    events,
    fully_committed,
    handled,
    handled_count,
    handlings_per_offset,
    lock_owners,
    order_violations,
    stored_offset,
)

TOPIC, GROUP = "orders", "billing-restart-skip"
BLOCKER = "order-blocker"
KEYS, PER_KEY = 100, 6
KEY_ARGS = (
    "--ordering",
    "key",
    "--lanes",
    "8",
    "--retry-initial-ms",
    "20",
    "--retry-max-ms",
    "50",
    "--flush-interval-ms",
    "100",
)
HANDLER_ENV = {"LOCKSTEP_TEST_MAX_DELAY_MS": "5"}


def _send(producer: Producer, redis_client: redis.Redis) -> tuple[int, dict[str, int]]:
    """The blocker (fails until its flag is cleared) first, then 600 messages of 100 keys.
    Returns (blocker offset, messages per key)."""
    redis_client.set(fail_flag(BLOCKER), 1)
    blocker = producer.send(TOPIC, BLOCKER, body(0, fail_while=BLOCKER)).offset
    sent = {BLOCKER: 1}
    for i in range(KEYS * PER_KEY):
        key = f"order-{i % KEYS:03d}"
        producer.send(TOPIC, key, body(sent.get(key, 0)))
        sent[key] = sent.get(key, 0) + 1
    return blocker, sent


def _completed(redis_client: redis.Redis) -> set[int]:
    return {
        o
        for a, b in decode_ranges(stored_offset(redis_client, TOPIC, GROUP, 0)[1])
        for o in range(a, b + 1)
    }


def _restart(
    redis_client: redis.Redis,
    spawn_consumer: SpawnConsumer,
    first: ConsumerProcess,
    sent: dict[str, int],
) -> list[dict[str, object]]:
    """Let the blocker succeed, start the next consumer, consume to the end; the records."""
    redis_client.delete(fail_flag(BLOCKER))
    second = spawn_consumer(TOPIC, GROUP, f"{first.consumer_id}-next", *KEY_ARGS, env=HANDLER_ENV)
    wait_until(
        lambda: fully_committed(redis_client, TOPIC, GROUP, 1),
        30,
        "the next consumer to commit the queue to its end",
    )
    assert second.stop() == 0, second.output()[-3000:]
    records = handled(redis_client)
    assert order_violations(records, sent) == {}
    return records


def test_it_does_not_redo_offsets_completed_before_the_last_flush_of_a_killed_consumer(
    redis_client: redis.Redis, producer: Producer, spawn_consumer: SpawnConsumer
) -> None:
    create_topic(redis_client, TOPIC, 1)
    blocker, sent = _send(producer, redis_client)
    first = spawn_consumer(TOPIC, GROUP, "skip-killed", *KEY_ARGS, env=HANDLER_ENV)
    wait_until(
        lambda: len(_completed(redis_client)) >= 200, 30, "a flush with 200 completed offsets"
    )
    first.kill()
    committed, _ = stored_offset(redis_client, TOPIC, GROUP, 0)
    flushed = _completed(redis_client)
    handled_by_first = {r["o"] for r in handled(redis_client)}
    assert committed == blocker, "the failing key did not hold the low-water mark"
    assert len(flushed) >= 200, f"only {len(flushed)} completed offsets were committed"
    assert flushed <= handled_by_first
    wait_until(
        lambda: not lock_owners(redis_client, TOPIC, GROUP, 1),
        10,
        "the killed consumer's lock to expire",
    )

    records = _restart(redis_client, spawn_consumer, first, sent)

    counts = handlings_per_offset(records)
    assert {o for (_, o), n in counts.items() if n > 1} <= handled_by_first - flushed
    redone = {r["o"] for r in records if r["c"] != first.consumer_id} & flushed
    assert redone == set(), f"{len(redone)} offsets committed as completed were handled again"
    assert counts[0, blocker] == 1
    assert len(counts) == sum(sent.values())
    print(f"{len(flushed)} completed offsets skipped, {sum(n - 1 for n in counts.values())} redone")


def test_it_does_not_redo_anything_a_gracefully_stopped_consumer_completed(
    redis_client: redis.Redis, producer: Producer, spawn_consumer: SpawnConsumer
) -> None:
    create_topic(redis_client, TOPIC, 1)
    blocker, sent = _send(producer, redis_client)
    first = spawn_consumer(TOPIC, GROUP, "skip-stopped", *KEY_ARGS, env=HANDLER_ENV)
    wait_until(lambda: handled_count(redis_client) >= 300, 30, "300 handlings")
    assert first.stop() == 0, first.output()[-3000:]
    handled_by_first = {r["o"] for r in handled(redis_client)}
    assert blocker == 0 and stored_offset(redis_client, TOPIC, GROUP, 0)[0] == blocker
    assert _completed(redis_client) == handled_by_first  # the final flush left nothing out
    (released,) = [
        e for e in events(redis_client, "lock_released") if e["consumer"] == first.consumer_id
    ]
    assert released["details"]["committed"] == blocker

    records = _restart(redis_client, spawn_consumer, first, sent)

    counts: Counter[tuple[int, int]] = handlings_per_offset(records)
    assert [o for (_, o), n in counts.items() if n > 1] == []
    assert len(counts) == sum(sent.values())
