"""Inhibition (docs/alerts.md, "Grouping and inhibition"): a queue stuck only because of
a key already alerted as held opens its ``queue_stuck`` alert (every surface says it is
stuck, docs/stuck.md) but is not notified on its own: the ``key_held`` notification
tells it. With the ``key_held`` rule switched off for the group, nothing else tells the
hold, and the stuck queue is notified. On a hand-built state in the suite's Redis: one
queue of group mailer, nothing waiting but key ``k``, held behind its dead letter for
30 s, T at 10 s."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

from lockstep.dashboard.alerts.evaluate import Evaluator
from lockstep.dashboard.alerts.models import Alert, Delivery, RuleSetting
from lockstep.workers import create_topic, keys
from lockstep.workers.inspect import redis_now_ms
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group
from tests.dashboard.alerts.findings import webhook_channel

pytestmark = pytest.mark.django_db

HELD_FOR_MS = 30_000


@pytest.fixture(autouse=True)
def at_once(settings: Any) -> None:
    settings.LOCKSTEP_STUCK_AFTER_SECONDS = 10
    settings.LOCKSTEP_ALERT_GROUP_WAIT_SECONDS = 0


def _hold_a_key(client: redis.Redis) -> None:
    create_topic(client, "orders", 1)
    register_group(client, "orders", "mailer")
    now = redis_now_ms(client)
    q0 = QueueRef("orders", 0)
    client.set(keys.sequence(q0), 7)
    client.hset(keys.offset(q0, "mailer"), mapping={"committed": 7, "token": 3})
    hold = {"state": "held", "since": now - HELD_FOR_MS, "offset": 4, "dlq_id": "1-1"}
    client.hset(keys.parked_keys(q0, "mailer"), "k", json.dumps(hold))
    client.zadd(
        keys.parked_messages(q0, "mailer", "k"),
        {json.dumps({"o": o, "k": "k", "t": now}): o for o in (5, 6)},
    )


def _told_rules() -> list[str]:
    return sorted(Delivery.objects.values_list("alert__rule", flat=True))


def test_it_opens_the_stuck_alert_but_tells_only_the_held_key(redis_client: redis.Redis) -> None:
    webhook_channel()
    _hold_a_key(redis_client)
    evaluator = Evaluator(redis_client)

    evaluator.tick()
    evaluator.tick()

    stuck = Alert.objects.get(rule="queue_stuck")
    held = Alert.objects.get(rule="key_held")
    assert stuck.details["reasons"] == ["held_key"] and stuck.details["keys"] == ["k"]
    assert _told_rules() == ["key_held"]
    assert not Delivery.objects.filter(alerts=stuck).exists()
    (muted,) = stuck.timeline.filter(kind="inhibited")
    assert muted.details == {"inhibited_by": held.pk}


def test_it_tells_the_stuck_queue_when_no_held_key_alert_does(redis_client: redis.Redis) -> None:
    webhook_channel()
    RuleSetting.objects.create(rule="key_held", group="mailer", enabled=False)
    _hold_a_key(redis_client)

    Evaluator(redis_client).tick()

    assert not Alert.objects.filter(rule="key_held").exists()
    assert _told_rules() == ["queue_stuck"]
