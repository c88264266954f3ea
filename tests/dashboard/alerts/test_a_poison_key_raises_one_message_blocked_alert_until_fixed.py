"""A poison message under unbounded retries (key ordering) raises exactly one
``message_blocked`` alert, naming the key, the offset and the messages behind it, within
the detection target; fixing the handler resolves it by itself."""

from __future__ import annotations

from functools import partial
from operator import lt

import pytest
import redis

from lockstep.dashboard.alerts.evaluate import Evaluator
from lockstep.dashboard.alerts.models import Alert, AlertEvent
from lockstep.workers import Producer, create_topic
from tests.dashboard.alerts.helpers import evaluate_until, unresolved
from tests.dashboard.scenarios import FailOn, consuming, key_on_queue
from tests.support import probe_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.on_cluster]


def test_it_raises_one_message_blocked_alert_and_resolves_it_after_the_fix(
    redis_url: str, redis_client: redis.Redis, settings: object
) -> None:
    settings.LOCKSTEP_ALERT_BLOCKED_RETRIES = 3  # type: ignore[attr-defined]
    create_topic(redis_client, "orders", 2)
    poison = key_on_queue(1, 2, "acct")
    handler = FailOn(poison)
    producer = Producer(redis_url)
    sent = [producer.send("orders", poison, f"m{i}".encode()) for i in range(4)]
    for i in range(6):
        producer.send("orders", key_on_queue(1, 2, f"ok{i}"), f"other{i}".encode())
    with consuming(
        redis_url,
        "orders",
        "billing",
        handler,
        ordering="key",
        max_reconsume_times=-1,
        retry_initial_ms=100,
        retry_max_ms=200,
    ):
        evaluator = Evaluator(redis_client)
        alert = evaluate_until(redis_client, unresolved("message_blocked"), evaluator=evaluator)
        delay_s = (alert.opened_at - alert.since).total_seconds()
        assert alert.queue == 1
        assert alert.key == poison
        assert alert.offset == sent[0].offset
        assert alert.details["waiting"] == 3
        assert alert.details["retries"] >= 3
        assert poison in alert.summary and "3 messages" in alert.summary
        assert "payment service unavailable" in alert.summary
        # More ticks while it keeps failing (a new failure before each): still one alert.
        for _ in range(4):
            evaluator.tick()
            before = handler.failures
            after = probe_until(lambda: handler.failures, partial(lt, before), timeout=10)
            assert after > before, "the poison message is no longer retried"
        assert Alert.objects.filter(rule="message_blocked").count() == 1

        handler.failing.clear()

        def state_after_a_tick() -> str:
            evaluator.tick()
            return Alert.objects.get(pk=alert.pk).state

        probe_until(state_after_a_tick, lambda s: s == "resolved", timeout=20)
    alert.refresh_from_db()
    assert alert.resolved_at is not None and alert.resolved_at > alert.opened_at
    assert alert.timeline.values_list("kind", flat=True).first() == AlertEvent.OPENED
    assert alert.timeline.filter(kind=AlertEvent.RESOLVED).count() == 1
    # Retried 3 times at 100-200 ms apart: raised within the 10 s target of its threshold.
    assert delay_s < 10, delay_s
