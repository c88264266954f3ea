"""The invariants of docs/semantics.md §10 under the failures that break naive consumers: three
consumer processes share 20,000 messages over 500 keys while one is killed with SIGKILL,
one is frozen with SIGSTOP in the middle of a handler until its lock has expired and is
then resumed, and a new one joins. Afterwards nothing was lost, per key the first successful
handlings are in produce order (duplicates allowed, reordering not), and the frozen
consumer's late commit was refused by fencing."""

from __future__ import annotations

import json
import random
import signal
import threading
import time
from collections import Counter

import pytest
import redis

from lockstep.workers import Producer, create_topic
from tests.support import wait_until
from tests.workers.conftest import SpawnConsumer
from tests.workers.handlers import SLOW_CLAIM
from tests.workers.harness import (
    FAST,
    ConsumerProcess,
    body,
    events,
    fully_committed,
    handled,
    handled_count,
    lock_owners,
    order_violations,
    registered,
)

pytestmark = [pytest.mark.slow, pytest.mark.on_cluster]

TOPIC, GROUP, QUEUES = "orders", "ledger", 8
KEYS, PER_KEY = 500, 40  # 20,000 messages
# Produced at a steady ~800/s (so ~25 s): the kill, the freeze and the join all happen
# while there is still a backlog to consume.
SEND_BATCH, SEND_BATCH_INTERVAL_S = 40, 0.05
SLOW_KEY, SLOW_HANDLER_S = "order-slow", 3.0


def _produce(producer: Producer, sends: list[str], sent: Counter[str]) -> None:
    for i, key in enumerate(sends):
        producer.send(TOPIC, key, body(sent[key]))
        sent[key] += 1
        if i % SEND_BATCH == SEND_BATCH - 1:
            time.sleep(SEND_BATCH_INTERVAL_S)


def _freeze_the_consumer_in_the_slow_handler(
    client: redis.Redis,
    producer: Producer,
    sent: Counter[str],
    by_id: dict[str, ConsumerProcess],
) -> ConsumerProcess:
    """Send a message whose first handling sleeps SLOW_HANDLER_S, then SIGSTOP whichever
    consumer is sleeping in it: it is frozen holding a granted message it has not committed."""
    producer.send(TOPIC, SLOW_KEY, body(0, sleep_once=SLOW_HANDLER_S))
    for seq in range(1, 5):
        producer.send(TOPIC, SLOW_KEY, body(seq))
    sent[SLOW_KEY] = 5
    claim = json.loads(
        wait_until(
            lambda: client.get(SLOW_CLAIM),
            30,
            "a consumer to start the slow message",
            interval=0.005,
        )
    )
    frozen = by_id[claim["consumer"]]
    frozen.signal(signal.SIGSTOP)
    assert claim["pid"] == frozen.pid
    return frozen


def _wait_until_its_locks_are_regranted(client: redis.Redis, frozen: ConsumerProcess) -> None:
    """Wait until every queue the frozen consumer held (the slow message's among them) has
    a live lock of another consumer: its own locks expired (lock_ttl_s after its last
    renewal) and were granted again under a new token."""
    slow_queue = json.loads(client.get(SLOW_CLAIM) or "{}")["queue"]
    owners = lock_owners(client, TOPIC, GROUP, QUEUES)
    held = {q for q, owner in owners.items() if owner == frozen.consumer_id} | {slow_queue}

    def still_held() -> set[int]:
        now = lock_owners(client, TOPIC, GROUP, QUEUES)
        return {q for q in held if now.get(q, frozen.consumer_id) == frozen.consumer_id}

    wait_until(
        lambda: not still_held(),
        FAST.lock_ttl_s + 30,
        lambda: f"queues {still_held()} of {frozen.consumer_id} to be granted to another",
    )


# Queue ordering commits the handled position on an interval (the default) or after every
# batch: both must keep the invariants.
@pytest.mark.parametrize("commit_interval_ms", ["200", "0"], ids=["interval", "every-batch"])
def test_it_keeps_every_key_in_order_and_loses_nothing_through_kill_pause_and_join(
    redis_client: redis.Redis,
    producer: Producer,
    spawn_consumer: SpawnConsumer,
    commit_interval_ms: str,
) -> None:
    create_topic(redis_client, TOPIC, QUEUES)
    env = {"LOCKSTEP_TEST_MAX_DELAY_MS": "2"}
    args = ("--commit-interval-ms", commit_interval_ms)
    first = {
        cid: spawn_consumer(TOPIC, GROUP, cid, *args, env=env) for cid in ("ol-a", "ol-b", "ol-c")
    }
    wait_until(
        lambda: (
            len(lock_owners(redis_client, TOPIC, GROUP, QUEUES)) == QUEUES
            and registered(redis_client, GROUP, TOPIC) == set(first)
        ),
        30,
        "three consumers to hold all queues",
    )
    sends = [f"order-{k:03d}" for k in range(KEYS) for _ in range(PER_KEY)]
    random.Random(20_000).shuffle(sends)
    sent: Counter[str] = Counter()
    sending = threading.Thread(target=_produce, args=(producer, sends, sent))
    sending.start()
    try:
        wait_until(lambda: handled_count(redis_client) >= 3000, 60, "3,000 handlings")
        killed = first["ol-a"]
        killed.kill()

        survivors = {cid: p for cid, p in first.items() if p is not killed}
        frozen = _freeze_the_consumer_in_the_slow_handler(redis_client, producer, sent, survivors)
        _wait_until_its_locks_are_regranted(redis_client, frozen)
        frozen.signal(signal.SIGCONT)

        joiner = spawn_consumer(TOPIC, GROUP, "ol-d", *args, env=env)
        wait_until(lambda: "ol-d" in registered(redis_client, GROUP, TOPIC), 30, "ol-d to join")
        backlog_when_joined = len(sends) - handled_count(redis_client)
    finally:
        sending.join()
    wait_until(
        lambda: fully_committed(redis_client, TOPIC, GROUP, QUEUES),
        120,
        "every queue to be committed to its end",
    )
    for p in [*survivors.values(), joiner]:
        assert p.stop() == 0, p.output()[-3000:]

    records = handled(redis_client)
    assert sum(sent.values()) == KEYS * PER_KEY + 5
    assert order_violations(records, dict(sent)) == {}
    assert backlog_when_joined > 0, "the run ended before ol-d joined"
    handlers = Counter(r["c"] for r in records)
    assert set(handlers) == {"ol-a", "ol-b", "ol-c", "ol-d"}, handlers
    rejected = [
        e for e in events(redis_client, "fencing_rejected") if e["consumer"] == frozen.consumer_id
    ]
    assert rejected, f"{frozen.consumer_id}'s late commit was not refused by fencing"
    assert {e["details"]["outcome"] for e in rejected} <= {"fenced", "expired"}
    overruns = [
        e
        for e in events(redis_client, "lock_margin_overrun")
        if e["consumer"] == frozen.consumer_id
    ]
    assert overruns, f"{frozen.consumer_id}'s handler outlived its lock unreported"
    print(
        f"{len(records)} handlings ({len(records) - sum(sent.values())} duplicates) by "
        f"{dict(handlers)}; {frozen.consumer_id} frozen; {len(rejected)} commit(s) fenced"
    )
