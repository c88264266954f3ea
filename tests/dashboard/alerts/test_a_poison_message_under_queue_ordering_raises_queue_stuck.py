"""Under queue ordering a poison message retried forever stops its whole queue: that
raises ``queue_stuck`` (and ``message_blocked`` with the messages of the queue behind it)
once the lag samples have shown no progress for the threshold (docs/stuck.md, reason
``no_progress``); fixing the handler resolves both by themselves."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

from lockstep.dashboard.alerts.evaluate import Evaluator
from lockstep.dashboard.alerts.models import Alert
from lockstep.dashboard.monitor.tasks import sample_lag
from tests.dashboard.alerts.helpers import evaluate_until, unresolved
from tests.dashboard.helpers import produce
from tests.dashboard.scenarios import FailOn, consuming, ingest_all
from tests.support import probe_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.on_cluster]

STUCK_AFTER_S = 3.0


def test_it_raises_queue_stuck_and_resolves_after_the_fix(
    redis_url: str, redis_client: redis.Redis, settings: Any
) -> None:
    from lockstep.workers import create_topic

    settings.LOCKSTEP_STUCK_AFTER_SECONDS = STUCK_AFTER_S
    settings.LOCKSTEP_ALERT_BLOCKED_RETRIES = 3
    create_topic(redis_client, "orders", 1)
    handler = FailOn("order-2")
    sent = produce(redis_url, "orders", ["order-1", "order-2", "order-3", "order-4"])
    with consuming(redis_url, "orders", "mailer", handler, max_reconsume_times=-1, suspend_ms=100):
        evaluator = Evaluator(redis_client)
        started = time.monotonic()
        stuck = evaluate_until(
            redis_client,
            unresolved("queue_stuck"),
            timeout=30,
            interval=0.1,
            evaluator=evaluator,
            sample=True,
        )
        raised_after_s = time.monotonic() - started
        blocked = evaluate_until(
            redis_client, unresolved("message_blocked"), timeout=10, evaluator=evaluator
        )
        assert (stuck.queue, stuck.offset) == (0, sent[1].offset)
        assert stuck.details["lag"] == 3
        assert (stuck.details["reason"], stuck.details["reasons"]) == (
            "no_progress",
            ["no_progress"],
        )
        assert "payment service unavailable" in stuck.summary
        assert (stuck.opened_at - stuck.since).total_seconds() >= STUCK_AFTER_S
        assert blocked.offset == sent[1].offset and blocked.details["waiting"] == 2
        # The committed offset stood still from the first failure: raised within the
        # threshold plus the 10 s target.
        assert raised_after_s <= STUCK_AFTER_S + 10

        handler.failing.clear()

        def open_count() -> int:
            sample_lag()
            ingest_all(redis_client)
            evaluator.tick()
            return Alert.objects.exclude(state="resolved").count()

        probe_until(open_count, lambda n: n == 0, timeout=20, interval=0.1)
    assert Alert.objects.filter(rule="queue_stuck").count() == 1
    assert Alert.objects.get(rule="queue_stuck").resolved_at is not None
