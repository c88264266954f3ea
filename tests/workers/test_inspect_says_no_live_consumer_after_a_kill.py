"""A consumer killed with SIGKILL stops counting as live within the heartbeat timeout,
although its card and its locks linger a while: its queues then read ``no_live_consumer``
(not the "consuming" its last card said) until the locks expire and they are unowned."""

from __future__ import annotations

import pytest
import redis

from lockstep.workers import create_topic
from lockstep.workers.inspect import consumers, queue_state
from lockstep.workers.refs import QueueRef
from tests.support import wait_until
from tests.workers.conftest import SpawnConsumer
from tests.workers.harness import FAST

pytestmark = pytest.mark.on_cluster

TOPIC, GROUP = "orders", "mailer"


def _state(client: redis.Redis) -> tuple[str | None, str]:
    groups = queue_state(client, QueueRef(TOPIC, 0))["groups"]
    return (groups[0]["owner"], groups[0]["state"]) if groups else (None, "no group yet")


def test_it_reports_no_live_consumer_once_the_owners_heartbeat_is_older_than_the_timeout(
    redis_client: redis.Redis, spawn_consumer: SpawnConsumer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCKSTEP_HEARTBEAT_TIMEOUT", str(FAST.heartbeat_timeout_s))
    create_topic(redis_client, TOPIC, 1)
    proc = spawn_consumer(TOPIC, GROUP, "doomed")
    wait_until(lambda: _state(redis_client) == ("doomed", "idle"), 20, "the queue to be owned")
    assert [c["id"] for c in consumers(redis_client)] == ["doomed"]

    proc.kill()
    # The lock outlives the heartbeat timeout (FAST: 3 s against 1.5 s): in between the
    # queue is still owned, by a consumer that is gone.
    after_kill = wait_until(
        lambda: (lambda found: found if found[1] != "idle" else None)(_state(redis_client)),
        FAST.lock_ttl_s,
        "the queue's state to change after the kill",
    )

    assert after_kill == ("doomed", "no_live_consumer")
    assert consumers(redis_client) == []
    assert redis_client.exists("ls:consumer:doomed")  # the card itself has not expired yet
    wait_until(lambda: _state(redis_client) == (None, "unowned"), 10, "the lock to expire")
