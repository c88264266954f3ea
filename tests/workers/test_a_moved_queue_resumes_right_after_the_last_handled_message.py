"""Queue ordering commits on an interval, yet a queue moved to another consumer by a
rebalance resumes exactly after the last message its previous owner handled: the drop
commits the handled position under the fence before the unlock, so there is no gap and no
overlap, even with a commit interval far longer than the hand-over."""

from __future__ import annotations

from collections import defaultdict

import pytest
import redis

from lockstep.workers import Producer, create_topic
from tests.support import wait_until
from tests.workers.conftest import SpawnConsumer
from tests.workers.harness import body, fully_committed, handled, lock_owners

pytestmark = pytest.mark.slow

TOPIC, GROUP, QUEUES = "orders", "mailer", 4
KEYS, PER_KEY = 40, 100
# Ten seconds between commits: only the hand-over's own commit can explain a clean resume.
ARGS = ("--commit-interval-ms", "10000")
ENV = {"LOCKSTEP_TEST_MAX_DELAY_MS": "20"}  # about 400 messages a second: a long run


def test_it_resumes_each_moved_queue_at_the_next_offset(
    redis_client: redis.Redis, producer: Producer, spawn_consumer: SpawnConsumer
) -> None:
    create_topic(redis_client, TOPIC, QUEUES)
    first = spawn_consumer(TOPIC, GROUP, "first", *ARGS, env=ENV)
    wait_until(
        lambda: len(lock_owners(redis_client, TOPIC, GROUP, QUEUES)) == QUEUES, 30, "the locks"
    )
    for seq in range(PER_KEY):
        for k in range(KEYS):
            producer.send(TOPIC, f"order-{k}", body(seq))
    wait_until(lambda: len(handled(redis_client)) > 200, 30, "first to consume for a while")

    second = spawn_consumer(TOPIC, GROUP, "second", *ARGS, env=ENV)
    wait_until(
        lambda: "second" in lock_owners(redis_client, TOPIC, GROUP, QUEUES).values(),
        30,
        "second to be given queues",
    )
    wait_until(
        lambda: fully_committed(redis_client, TOPIC, GROUP, QUEUES), 60, "everything committed"
    )
    assert first.stop() == 0 and second.stop() == 0

    by_queue: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for r in handled(redis_client):
        by_queue[r["q"]].append((r["c"], r["o"]))
    moved = 0
    for q, rows in by_queue.items():
        firsts = [o for c, o in rows if c == "first"]
        seconds = [o for c, o in rows if c == "second"]
        if not seconds or not firsts:
            continue
        moved += 1
        resumed = f"queue {q}: first ended at {max(firsts)}, second began at {seconds[0]}"
        assert seconds[0] == max(firsts) + 1, resumed
        assert sorted(o for _, o in rows) == list(range(len(rows))), f"queue {q}: gap or overlap"
    assert moved >= 1, "no queue changed hands"
