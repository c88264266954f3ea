"""The fleet writer parses each lock owner's card (a snapshot of every queue it owns) at
most once per ``CARD_MAX_AGE_S``, not at every refresh: a refresh right after another
uses the card it read. A card whose consumer its cached heartbeat shows dead is read
again at once, so a consumer that came back is seen live without waiting, and one whose
card is gone is judged on what Redis says now (docs/fleet-state.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.store.cards import CARD_MAX_AGE_S
from lockstep.dashboard.web.store.fleet import FleetWriter
from lockstep.dashboard.web.store.models import QueueStatus
from lockstep.workers import keys
from lockstep.workers.inspect import redis_now_ms
from lockstep.workers.refs import QueueRef
from tests.dashboard.fleets import make_fleet

pytestmark = pytest.mark.django_db

TOPIC, GROUP, OWNER = "orders", "billing", "consumer-1"
QUEUE = QueueRef(TOPIC, 0)


def _own_queues(client: redis.Redis, queues: int) -> None:
    now_ms = redis_now_ms(client)
    for q in range(queues):
        client.hset(
            keys.lock(QueueRef(TOPIC, q), GROUP),
            mapping={
                "owner": OWNER,
                "expires_at": now_ms + 600_000,
                "token": 3,
                "granted_at": now_ms,
            },
        )


def _write_card(client: redis.Redis, state: str, heartbeat_ms: int) -> None:
    snapshot: dict[str, Any] = {"state": state, "token": 3, "last_error": "", "retries": 0}
    card = {
        "host": "h",
        "pid": 1,
        "started_at_ms": heartbeat_ms,
        "heartbeat_at_ms": heartbeat_ms,
        "subscriptions": [
            {"topic": TOPIC, "group": GROUP, "ordering": "queue", "queues": {"0": snapshot}}
        ],
    }
    client.set(keys.consumer_info(OWNER), json.dumps(card))
    client.sadd(keys.CONSUMERS, OWNER)


def _state() -> str:
    return QueueStatus.objects.get(topic=TOPIC, group=GROUP, queue=0).state


def test_a_refresh_right_after_another_uses_the_card_it_read(redis_client: redis.Redis) -> None:
    make_fleet(redis_client, [TOPIC], 2, [GROUP])
    _own_queues(redis_client, 2)
    _write_card(redis_client, "consuming", redis_now_ms(redis_client))
    writer = FleetWriter(get_redis())

    writer.refresh([QUEUE])
    first = _state()
    _write_card(redis_client, "suspended", redis_now_ms(redis_client))
    writer.refresh([QUEUE])  # well within CARD_MAX_AGE_S of the first
    second = _state()

    assert CARD_MAX_AGE_S >= 0.5
    assert (first, second) == ("consuming", "consuming")


def test_a_consumer_its_cached_card_shows_dead_is_read_again_at_once(
    redis_client: redis.Redis,
) -> None:
    make_fleet(redis_client, [TOPIC], 2, [GROUP])
    _own_queues(redis_client, 2)
    long_ago = redis_now_ms(redis_client) - 3_600_000
    _write_card(redis_client, "consuming", long_ago)
    writer = FleetWriter(get_redis())

    writer.refresh([QUEUE])
    silent = _state()
    _write_card(redis_client, "suspended", redis_now_ms(redis_client))  # it came back
    writer.refresh([QUEUE])

    assert silent == "no_live_consumer"
    assert _state() == "suspended"
