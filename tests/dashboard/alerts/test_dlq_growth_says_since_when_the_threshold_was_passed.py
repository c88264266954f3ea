"""``dlq_growth``'s ``since`` is the moment its condition first held (the dead letter that
passed the threshold), not the start of its window: an alert must never claim a
condition older than the dead letters that caused it."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from lockstep.dashboard.alerts.evaluate import Evaluator
from lockstep.dashboard.alerts.models import Alert
from lockstep.dashboard.web.store.models import Event
from lockstep.dashboard.web.store.queries import at
from lockstep.workers import create_topic
from lockstep.workers import events as ev
from lockstep.workers.inspect import redis_now_ms
from lockstep.workers.topics import register_group

pytestmark = pytest.mark.django_db

# Seconds before now of the four dead letters, within a 300 s window; the threshold 2
# is passed by the third.
ARRIVED_S_AGO = (250, 200, 100, 50)


def test_it_dates_the_condition_from_the_dead_letter_that_passed_the_threshold(
    redis_client: redis.Redis, settings: Any
) -> None:
    settings.LOCKSTEP_ALERT_DLQ_GROWTH = 2
    settings.LOCKSTEP_ALERT_DLQ_WINDOW_SECONDS = 300
    create_topic(redis_client, "orders", 1)
    register_group(redis_client, "orders", "billing")
    now = redis_now_ms(redis_client)
    for n, ago in enumerate(ARRIVED_S_AGO):
        Event.objects.create(
            stream_id=f"{now - ago * 1000}-{n}",
            type=ev.DEAD_LETTERED,
            ts=at(now - ago * 1000),
            topic="orders",
            group="billing",
            queue=0,
            key=f"order-{n}",
        )
    evaluator = Evaluator(redis_client)

    evaluator.tick()
    evaluator.tick()  # while it lasts, the start stays where it was

    alert = Alert.objects.get(rule="dlq_growth")
    assert alert.since == at(now - ARRIVED_S_AGO[2] * 1000)
    assert alert.details["new_dead_letters"] == 4
    assert "4 new dead letters in the last 5 min (threshold 2)" in alert.summary
