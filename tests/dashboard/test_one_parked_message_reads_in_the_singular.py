"""A held key with one message parked behind it says "1 message parked", not "1 messages
parked": in the stuck reason (``web.store.stuck``) and in the ``key_held`` alert."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

from lockstep.dashboard.alerts.evaluate import Evaluator
from lockstep.dashboard.alerts.models import Alert
from lockstep.dashboard.web.store.stuck import read_stuck
from lockstep.workers import create_topic, keys
from lockstep.workers.inspect import overview, redis_now_ms
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group

pytestmark = pytest.mark.django_db

Q0 = QueueRef("orders", 0)
HELD_FOR_MS = 3_600_000  # an hour: past any stuck or alert threshold


def _hold_one_key_with(client: redis.Redis, parked: int) -> None:
    now = redis_now_ms(client)
    create_topic(client, "orders", 1)
    register_group(client, "orders", "billing")
    client.set(keys.sequence(Q0), 5 + parked)
    client.hset(keys.offset(Q0, "billing"), mapping={"committed": 4, "token": 1})
    hold = {"state": "held", "since": now - HELD_FOR_MS, "offset": 4, "dlq_id": "9-0"}
    client.hset(keys.parked_keys(Q0, "billing"), "order-1", json.dumps(hold))
    client.zadd(
        keys.parked_messages(Q0, "billing", "order-1"),
        {json.dumps({"o": o, "k": "order-1", "t": now}): o for o in range(5, 5 + parked)},
    )


@pytest.mark.parametrize(("parked", "said"), [(1, "1 message parked"), (2, "2 messages parked")])
def test_the_stuck_reason_counts_parked_messages_in_the_right_number(
    redis_client: redis.Redis, parked: int, said: str
) -> None:
    _hold_one_key_with(redis_client, parked)

    (held,) = [
        s for s in read_stuck(redis_client, overview(redis_client)) if s["reason"] == "held_key"
    ]

    assert said in held["why"]
    assert "1 messages" not in held["why"]


@pytest.mark.parametrize(("parked", "said"), [(1, "1 message parked"), (2, "2 messages parked")])
def test_the_key_held_alert_counts_parked_messages_in_the_right_number(
    redis_client: redis.Redis, settings: Any, parked: int, said: str
) -> None:
    settings.LOCKSTEP_ALERT_HELD_AFTER_SECONDS = 0
    _hold_one_key_with(redis_client, parked)

    Evaluator(redis_client).tick()

    summary = Alert.objects.get(rule="key_held").summary
    assert said in summary
    assert "1 messages" not in summary
