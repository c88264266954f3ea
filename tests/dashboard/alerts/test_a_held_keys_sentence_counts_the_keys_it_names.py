"""A held-keys sentence counts one set: the keys it says are held, the keys it names and
the messages it says are parked are those of the same keys (issue #41: "1 key held
(order-100), 6 messages parked" while a second, younger hold parked the other 3). Past
five keys it names the first five and says how many more. Read where an operator reads
it: the group page's Stuck entry and the ``queue_stuck`` alert's summary. On hand-built
states in the suite's Redis, T (``LOCKSTEP_STUCK_AFTER_SECONDS``) at 60 s."""

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

pytestmark = pytest.mark.django_db

Q0 = QueueRef("orders", 0)
AN_HOUR_MS = 3_600_000


@pytest.fixture(autouse=True)
def stuck_after_a_minute(settings: Any) -> None:
    settings.LOCKSTEP_STUCK_AFTER_SECONDS = 60


def _hold(client: redis.Redis, key: str, held_ms: int, parked: int, first_offset: int) -> None:
    """``key`` held on queue 0 of billing for ``held_ms``, ``parked`` messages behind it."""
    now = redis_now_ms(client)
    hold = {"state": "held", "since": now - held_ms, "offset": first_offset, "dlq_id": f"{key}-0"}
    client.hset(keys.parked_keys(Q0, "billing"), key, json.dumps(hold))
    offsets = range(first_offset + 1, first_offset + 1 + parked)
    client.zadd(
        keys.parked_messages(Q0, "billing", key),
        {json.dumps({"o": o, "k": key, "t": now}): o for o in offsets},
    )


def _queue(client: redis.Redis, produced: int) -> None:
    create_topic(client, "orders", 1)
    register_group(client, "orders", "billing")
    client.set(keys.sequence(Q0), produced)
    client.hset(keys.offset(Q0, "billing"), mapping={"committed": produced, "token": 1})


def _group_page_why(client: Client, viewer: User) -> str:
    client.force_login(viewer)
    page = client.get("/topics/orders/groups/billing").content.decode()
    row = page.split('<tr class="stuck-queue" data-queue="0" data-reason="held_key">', 1)[1]
    return row.split('<td class="why">', 1)[1].split("</td>", 1)[0]


def _stuck_summary(client: redis.Redis) -> str:
    Evaluator(client).tick()
    return Alert.objects.get(rule="queue_stuck").summary


def test_it_counts_only_the_messages_of_the_keys_it_names(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    _queue(redis_client, produced=20)
    _hold(redis_client, "order-100", AN_HOUR_MS, parked=3, first_offset=4)
    _hold(redis_client, "order-900", 1_000, parked=3, first_offset=10)  # not stuck yet

    said = "queue 0: 1 key held behind its dead letter (order-100), 3 messages parked, for "
    why = _group_page_why(client, viewer)
    summary = _stuck_summary(redis_client)

    assert said in why
    assert said in summary
    assert "6 messages" not in why and "6 messages" not in summary


def test_it_names_the_first_five_keys_and_says_how_many_more(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    _queue(redis_client, produced=30)
    for n in range(7):
        _hold(redis_client, f"k{n}", AN_HOUR_MS - n, parked=1, first_offset=2 * n)

    said = (
        "queue 0: 7 keys held behind their dead letters (k0, k1, k2, k3, k4 and 2 more), "
        "7 messages parked, for "
    )
    why = _group_page_why(client, viewer)
    summary = _stuck_summary(redis_client)

    assert said in why
    assert said in summary
