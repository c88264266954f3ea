"""SIGKILL of the only consumer (a real ``lockstep consume`` process) while its queue has
a backlog raises ``consumer_lost`` (naming the process and its queue) and
``queue_unowned`` within the heartbeat timeout plus the rules' thresholds: alerts of their
own that fire sooner than ``queue_stuck``, which waits the stuck threshold T from the
last heartbeat (docs/stuck.md) and so has not fired yet."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from lockstep.dashboard.alerts.evaluate import Evaluator
from lockstep.dashboard.alerts.models import Alert
from lockstep.workers import create_topic
from lockstep.workers.inspect import queue_state
from lockstep.workers.refs import QueueRef
from tests.dashboard.alerts.helpers import evaluate_until, unresolved
from tests.dashboard.helpers import produce
from tests.support import probe_until
from tests.workers.harness import ConsumerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.on_cluster]

HEARTBEAT_TIMEOUT_S = 2.0
UNOWNED_AFTER_S = 3.0
TIMINGS = {
    "LOCKSTEP_HEARTBEAT_INTERVAL": "0.3",
    "LOCKSTEP_HEARTBEAT_TIMEOUT": str(HEARTBEAT_TIMEOUT_S),
    "LOCKSTEP_LOCK_TTL": "60",
    "LOCKSTEP_CLIENT_LOCK_EXPIRY": "30",
    "LOCKSTEP_LOCK_RENEW_INTERVAL": "2",
}


@pytest.fixture
def consumer(
    redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ConsumerProcess]:
    for name, value in TIMINGS.items():
        monkeypatch.setenv(name, value)
    proc = ConsumerProcess(redis_url, "orders", "mailer", "c-doomed", tmp_path, env=TIMINGS)
    proc.start()
    yield proc
    proc.kill()


def test_it_raises_consumer_lost_and_queue_unowned(
    redis_url: str, redis_client: redis.Redis, consumer: ConsumerProcess, settings: Any
) -> None:
    settings.LOCKSTEP_ALERT_CONSUMER_LOST_SECONDS = 0
    settings.LOCKSTEP_ALERT_UNOWNED_AFTER_SECONDS = UNOWNED_AFTER_S
    settings.LOCKSTEP_STUCK_AFTER_SECONDS = 10
    create_topic(redis_client, "orders", 1)
    ref = QueueRef("orders", 0)
    probe_until(
        lambda: queue_state(redis_client, ref)["groups"],
        lambda g: bool(g) and g[0]["owner"] == "c-doomed",
        timeout=30,
    )
    evaluator = Evaluator(redis_client)
    evaluator.tick()
    consumer.signal(signal.SIGKILL)
    killed_at = time.monotonic()
    consumer.kill()
    produce(redis_url, "orders", ["order-1", "order-2", "order-3"])

    lost = evaluate_until(
        redis_client, unresolved("consumer_lost"), timeout=15, interval=0.2, evaluator=evaluator
    )
    lost_after_s = time.monotonic() - killed_at
    unowned = evaluate_until(
        redis_client, unresolved("queue_unowned"), timeout=15, interval=0.2, evaluator=evaluator
    )
    unowned_after_s = time.monotonic() - killed_at
    print(f"kill -> consumer_lost {lost_after_s:.2f} s, queue_unowned {unowned_after_s:.2f} s")

    assert (lost.consumer, lost.topic, lost.group) == ("c-doomed", "orders", "mailer")
    assert lost.details["queues"] == [0]
    assert "no live consumer" in lost.summary
    assert (unowned.topic, unowned.group, unowned.queue) == ("orders", "mailer", 0)
    assert unowned.details["state"] == "no_live_consumer"
    assert "c-doomed" in unowned.summary and "3 messages wait" in unowned.summary
    # Within the heartbeat timeout (+ the evaluation interval) and the unowned threshold
    # counted from the last heartbeat (+ margin for this shared machine).
    assert lost_after_s <= HEARTBEAT_TIMEOUT_S + 2.5
    assert unowned_after_s <= UNOWNED_AFTER_S + 2.5
    assert not Alert.objects.filter(rule="queue_stuck").exists()
