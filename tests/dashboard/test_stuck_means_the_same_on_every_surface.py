"""One definition of *stuck* (docs/stuck.md), followed by every surface that says it: the
overview (its table filtered to ``state=stuck``, its worst queues and its summary's
count), the group page, the ``queue_stuck`` alert and ``/metrics``'
``lockstep_queue_stuck``. On one hand-built state, a key held for 30 s: with the threshold
T at 60 s it is stuck nowhere; with T at 10 s it is stuck everywhere, reason ``held_key``.
(``key_held``, an alert of its own, may tell of the hold sooner; it never says stuck.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.alerts.evaluate import Evaluator
from lockstep.dashboard.alerts.models import Alert
from lockstep.workers import create_topic, keys
from lockstep.workers.inspect import redis_now_ms
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group
from tests.dashboard.helpers import get_json, overview_rows, summary_group
from tests.dashboard.test_metrics_endpoint import parse

pytestmark = pytest.mark.django_db

HELD_FOR_MS = 30_000


def _hold_a_key(client: redis.Redis) -> None:
    """orders, one queue, group mailer: nothing waits but key k, held behind its dead
    letter for 30 s with 2 messages parked; no consumer."""
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


def _surfaces(client: Client, redis_client: redis.Redis) -> dict[str, Any]:
    """What each surface says is stuck: ``(group, queue, reason)`` entries, the alert's
    reason, and the gauge."""
    overview = get_json(client, "/api/v1/overview")
    stuck_rows = overview_rows(client, state="stuck")
    group = get_json(client, "/api/v1/topics/orders/groups/mailer")
    Evaluator(redis_client).tick()
    alert = Alert.objects.filter(rule="queue_stuck").exclude(state="resolved").first()
    metrics = parse(client.get("/metrics").content.decode())
    (gauge,) = metrics["lockstep_queue_stuck"].samples.values()
    return {
        "overview": [(r["group"], r["queue"], r["stuck"]) for r in stuck_rows],
        "overview_worst": [(r["group"], r["queue"], r["stuck"]) for r in overview["worst"]],
        "overview_count": summary_group(overview, "orders", "mailer")["stuck"],
        "group_page": [(a["group"], a["queue"], a["reason"]) for a in group["stuck"]],
        "group_count": group["totals"]["stuck"],
        "alert": alert.details["reason"] if alert else None,
        "metrics": gauge,
    }


def test_a_key_held_for_less_than_t_is_stuck_nowhere(
    client: Client, viewer: User, redis_client: redis.Redis, settings: Any
) -> None:
    settings.LOCKSTEP_STUCK_AFTER_SECONDS = 60
    _hold_a_key(redis_client)
    client.force_login(viewer)

    assert _surfaces(client, redis_client) == {
        "overview": [],
        "overview_worst": [("mailer", 0, None)],  # held keys want a look, stuck or not
        "overview_count": 0,
        "group_page": [],
        "group_count": 0,
        "alert": None,
        "metrics": 0,
    }
    held = Alert.objects.get(rule="key_held")  # its own, sooner alert
    assert "stuck" not in held.summary


def test_a_key_held_for_t_or_longer_is_stuck_everywhere_as_held_key(
    client: Client, viewer: User, redis_client: redis.Redis, settings: Any
) -> None:
    settings.LOCKSTEP_STUCK_AFTER_SECONDS = 10
    _hold_a_key(redis_client)
    client.force_login(viewer)

    assert _surfaces(client, redis_client) == {
        "overview": [("mailer", 0, "held_key")],
        "overview_worst": [("mailer", 0, "held_key")],
        "overview_count": 1,
        "group_page": [("mailer", 0, "held_key")],
        "group_count": 1,
        "alert": "held_key",
        "metrics": 1,
    }
    stuck = Alert.objects.get(rule="queue_stuck")
    assert HELD_FOR_MS / 1000 <= (stuck.opened_at - stuck.since).total_seconds() < 60
