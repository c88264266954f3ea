"""Rebalance: consumers joining and leaving re-spread the queues evenly within one rebalance
interval, and a queue is never consumed by two consumers at the same time."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter, defaultdict

import pytest
import redis

from lockstep.workers import Producer, create_topic
from tests.support import wait_until
from tests.workers.conftest import SpawnConsumer
from tests.workers.handlers import HANDLED
from tests.workers.harness import (
    FAST,
    body,
    events,
    fully_committed,
    handled,
    handled_count,
    lock_owners,
    order_violations,
    overlapping_handlings,
    queues_by_owner,
    registered,
)

pytestmark = pytest.mark.slow

TOPIC, GROUP, QUEUES = "orders", "fulfilment", 8
SEND_INTERVAL_S = 0.004  # ~250 messages/s keeps every queue busy during each handover


def _produce_until(stop: threading.Event, producer: Producer, sent: Counter[str]) -> None:
    i = 0
    while not stop.is_set():
        key = f"order-{i % 64}"
        producer.send(TOPIC, key, body(sent[key]))
        sent[key] += 1
        i += 1
        time.sleep(SEND_INTERVAL_S)


def _settles_to(client: redis.Redis, expected: dict[str, list[int]], since: float) -> float:
    """Seconds from ``since`` until the live locks are exactly ``expected``."""

    def owners() -> dict[str, list[int]]:
        return queues_by_owner(lock_owners(client, TOPIC, GROUP, QUEUES))

    wait_until(
        lambda: owners() == expected,
        FAST.rebalance_interval_s * 3,
        lambda: f"locks to settle to {expected}; they are {owners()}",
        interval=0.02,
    )
    return time.monotonic() - since


def _handles_every_queue(client: redis.Redis, expected: dict[str, list[int]]) -> None:
    """Wait until, from now on, each consumer has handled a message on each of its queues
    in ``expected``: traffic flows through every queue before the next change."""
    start = handled_count(client)

    def missing() -> set[tuple[str, int]]:
        seen = {(r["c"], r["q"]) for r in map(json.loads, client.lrange(HANDLED, start, -1))}
        return {(c, q) for c, queues in expected.items() for q in queues} - seen

    wait_until(lambda: not missing(), 30, lambda: f"handlings of (consumer, queue) {missing()}")


def test_it_spreads_queues_evenly_as_consumers_join_and_leave(
    redis_client: redis.Redis, producer: Producer, spawn_consumer: SpawnConsumer
) -> None:
    create_topic(redis_client, TOPIC, QUEUES)
    env = {"LOCKSTEP_TEST_MAX_DELAY_MS": "2"}
    one = {"rb-a": list(range(8))}
    three = {"rb-a": [0, 1, 2], "rb-b": [3, 4, 5], "rb-c": [6, 7]}
    two = {"rb-a": [0, 1, 2, 3], "rb-b": [4, 5, 6, 7]}
    a = spawn_consumer(TOPIC, GROUP, "rb-a", env=env)
    _settles_to(redis_client, one, time.monotonic())
    sent: Counter[str] = Counter()
    stop = threading.Event()
    sending = threading.Thread(target=_produce_until, args=(stop, producer, sent))
    sending.start()
    try:
        _handles_every_queue(redis_client, one)
        b = spawn_consumer(TOPIC, GROUP, "rb-b", env=env)
        c = spawn_consumer(TOPIC, GROUP, "rb-c", env=env)
        wait_until(
            lambda: registered(redis_client, GROUP, TOPIC) == {"rb-a", "rb-b", "rb-c"},
            30,
            "rb-b and rb-c to join",
        )
        joined = _settles_to(redis_client, three, time.monotonic())
        _handles_every_queue(redis_client, three)
        left_at = time.monotonic()
        exit_code = c.stop()  # graceful: finish the message, commit, unlock, leave
        assert exit_code == 0, c.output()
        left = _settles_to(redis_client, two, left_at)
        _handles_every_queue(redis_client, two)
    finally:
        stop.set()
        sending.join()
    wait_until(
        lambda: fully_committed(redis_client, TOPIC, GROUP, QUEUES), 30, "the backlog to drain"
    )
    assert a.stop() == 0 and b.stop() == 0

    print(f"1 -> 3 settled in {joined:.2f}s, 3 -> 2 in {left:.2f}s")
    assert joined < FAST.rebalance_interval_s, f"1 -> 3 took {joined:.1f}s"
    assert left < FAST.rebalance_interval_s, f"3 -> 2 took {left:.1f}s"
    records = handled(redis_client)
    assert order_violations(records, dict(sent)) == {}
    assert overlapping_handlings(records) == []
    assert {r["c"] for r in records} == {"rb-a", "rb-b", "rb-c"}
    _assert_every_handover_went_through_a_release(redis_client)


def _assert_every_handover_went_through_a_release(client: redis.Redis) -> None:
    """Per queue, grants carry strictly increasing tokens, and before a queue changed hands
    its previous holder released it (or lost it) under the token it was granted."""
    acquired: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for e in events(client, "lock_acquired"):
        acquired[e["queue"]].append((e["token"], e["consumer"]))
    ended = {
        (e["queue"], e["token"], e["consumer"])
        for e in events(client, "lock_released", "lock_lost", "lock_renew_failed")
    }
    assert sorted(acquired) == list(range(QUEUES))
    for queue, grants in acquired.items():
        tokens = [t for t, _ in grants]
        assert len(set(tokens)) == len(tokens), f"queue {queue} granted a token twice"
        ordered = sorted(grants)
        for (token, holder), (_, successor) in itertools.pairwise(ordered):
            if holder != successor:
                assert (queue, token, holder) in ended, (
                    f"queue {queue} went from {holder} to {successor} without a release"
                )
