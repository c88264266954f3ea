"""A resolved ``key_held`` alert says how long the key was held (resolved_at - since)
and how the hold ended, not the duration and hold state last seen while it was open
("for 0 s", "hold state held")."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

from lockstep.dashboard.alerts.evaluate import Evaluator
from lockstep.dashboard.alerts.models import RESOLVED, Alert
from lockstep.dashboard.alerts.text import duration
from lockstep.dashboard.web.store.models import Event
from lockstep.dashboard.web.store.queries import at
from lockstep.workers import create_topic, keys
from lockstep.workers import events as ev
from lockstep.workers.inspect import redis_now_ms
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group

pytestmark = pytest.mark.django_db

HELD_FOR_MS = 158_000
Q0 = QueueRef("orders", 0)


def _hold(client: redis.Redis, now: int) -> None:
    create_topic(client, "orders", 1)
    register_group(client, "orders", "billing")
    client.set(keys.sequence(Q0), 7)
    client.hset(keys.offset(Q0, "billing"), mapping={"committed": 7, "token": 3})
    hold = {"state": "held", "since": now - HELD_FOR_MS, "offset": 4, "dlq_id": "9-0"}
    client.hset(keys.parked_keys(Q0, "billing"), "order-200", json.dumps(hold))
    client.zadd(
        keys.parked_messages(Q0, "billing", "order-200"),
        {json.dumps({"o": o, "k": "order-200", "t": now}): o for o in (5, 6)},
    )


def _release(client: redis.Redis, now: int) -> None:
    """What a discard does, as far as the alert can see: the hold is gone and the
    ingester stored the discard."""
    client.delete(keys.parked_keys(Q0, "billing"), keys.parked_messages(Q0, "billing", "order-200"))
    Event.objects.create(
        stream_id=f"{now}-0",
        type=ev.DEAD_LETTER_DISCARDED,
        ts=at(now),
        topic="orders",
        group="billing",
        queue=0,
        key="order-200",
        details={"dlq_id": "9-0", "offset": 4, "actor": "alice"},
    )


def test_it_states_the_real_duration_and_how_the_hold_ended(
    redis_client: redis.Redis, settings: Any
) -> None:
    settings.LOCKSTEP_ALERT_HELD_AFTER_SECONDS = 0
    now = redis_now_ms(redis_client)
    _hold(redis_client, now)
    evaluator = Evaluator(redis_client)
    evaluator.tick()
    opened = Alert.objects.get(rule="key_held")
    assert opened.details["hold_state"] == "held"

    _release(redis_client, now)
    evaluator.tick()

    alert = Alert.objects.get(pk=opened.pk)
    assert alert.state == RESOLVED and alert.resolved_at is not None
    held_s = (alert.resolved_at - alert.since).total_seconds()
    assert held_s >= HELD_FOR_MS / 1000
    assert f"resolved after {duration(held_s)}" in alert.summary
    assert "the key is released: its dead letter was discarded by alice" in alert.summary
    assert "held behind its dead letter (offset 4) for" not in alert.summary  # the open one
    assert alert.details["hold_state"] == "released"
    resolved = alert.timeline.get(kind="resolved")
    assert resolved.note == "the key is released: its dead letter was discarded by alice"
