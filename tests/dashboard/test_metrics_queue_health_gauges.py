"""GET /metrics: the queue-health gauges (stuck queues, blocked and held keys, dead letters
waiting, silent consumers) on a hand-built Redis state: a series for every (topic, group,
queue), 0 where nothing is wrong, so absent never means 0."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pytest
import redis
from django.test import Client

from lockstep.workers import create_topic, keys
from lockstep.workers.inspect import redis_now_ms
from lockstep.workers.inspect.consumers import heartbeat_timeout
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group
from tests.dashboard.deadletters.helpers import add_dead_letter
from tests.dashboard.test_metrics_endpoint import Family, parse, value_of

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]

LIVE, SILENT = "host@1@abc", "host@2@def"


def _blocked_key(key: str, offset: int, since_ms: int) -> dict[str, object]:
    return {
        "key": key,
        "offset": offset,
        "retries": 3,
        "waiting": 2,
        "error": "RuntimeError: boom",
        "since_ms": since_ms,
    }


def _card(subscriptions: Sequence[Mapping[str, object]], heartbeat_at_ms: int) -> str:
    return json.dumps({"subscriptions": subscriptions, "heartbeat_at_ms": heartbeat_at_ms})


def _build_state(client: redis.Redis) -> list[str]:
    """orders (2 queues), groups mailer and auditor. Queue 0: mailer's live owner reports
    two blocked keys under key ordering, one blocked for 2 min (stuck), one for 1 s.
    Queue 1: mailer holds key k (2 messages parked) since 2 min (stuck) and has 3 dead
    letters waiting. A
    consumer of auditor stopped heartbeating but its card has not expired. Returns the
    dead letters' ids."""
    create_topic(client, "orders", 2)
    register_group(client, "orders", "mailer")
    register_group(client, "orders", "auditor")
    now = redis_now_ms(client)
    q0, q1 = QueueRef("orders", 0), QueueRef("orders", 1)
    client.set(keys.sequence(q0), 10)
    for offset in range(10):
        client.xadd(keys.stream(q0), {"k": "k", "b": "x", "h": "{}", "t": now}, id=f"{offset}-1")
    client.hset(keys.offset(q0, "mailer"), mapping={"committed": 4, "token": 7})
    client.hset(
        keys.lock(q0, "mailer"),
        mapping={"owner": LIVE, "token": 7, "expires_at": now + 60_000, "granted_at": now},
    )
    snapshot = {
        "state": "blocked",
        "token": 7,
        "last_error": "RuntimeError: boom",
        "retries": 0,
        "head_offset": 4,
        "low_water": 4,
        "highest_completed": 6,
        "in_flight": 2,
        "blocked_keys": [
            _blocked_key("a", 4, now - 120_000),
            _blocked_key("b", 5, now - 1_000),
        ],
        "blocked_count": 2,
    }
    mailer = {"topic": "orders", "group": "mailer", "ordering": "key", "queues": {"0": snapshot}}
    client.set(keys.consumer_info(LIVE), _card([mailer], now))
    client.set(keys.sequence(q1), 2)
    client.hset(keys.offset(q1, "mailer"), mapping={"committed": 2, "token": 3})
    client.hset(
        keys.parked_keys(q1, "mailer"), "k", json.dumps({"state": "held", "since": now - 120_000})
    )
    client.zadd(
        keys.parked_messages(q1, "mailer", "k"),
        {json.dumps({"o": o, "k": "k", "t": now}): o for o in (5, 6)},
    )
    dlq_ids = [
        add_dead_letter(client, topic="orders", group="mailer", queue=1, offset=offset)
        for offset in range(3)
    ]
    silent_since = now - int((heartbeat_timeout() + 5) * 1000)
    auditor = {"topic": "orders", "group": "auditor", "queues": {}}
    client.set(keys.consumer_info(SILENT), _card([auditor], silent_since))
    client.sadd(keys.CONSUMERS, LIVE, SILENT)
    return dlq_ids


def _scrape(client: Client) -> dict[str, Family]:
    response = client.get("/metrics")
    assert response.status_code == 200
    return parse(response.content.decode())


def _per_queue(families: dict[str, Family], name: str) -> dict[tuple[str, int], float]:
    """``(group, queue) -> value`` of a topic/group/queue gauge of topic orders."""
    out = {}
    for labels, v in families[name].samples.items():
        found = dict(labels)
        assert found["topic"] == "orders"
        out[(found["group"], int(found["queue"]))] = v
    return out


EVERY_QUEUE = {("mailer", 0), ("mailer", 1), ("auditor", 0), ("auditor", 1)}


def test_it_marks_the_queues_with_a_long_blocked_or_a_held_key_as_stuck(
    client: Client, redis_client: redis.Redis
) -> None:
    _build_state(redis_client)

    families = _scrape(client)

    assert families["lockstep_queue_stuck"].type == "gauge"
    stuck = _per_queue(families, "lockstep_queue_stuck")
    # auditor is behind on both queues without an owner, but with no lag samples yet
    # nothing says since when: not stuck.
    assert stuck == {
        ("mailer", 0): 1,  # key a blocked for 2 min
        ("mailer", 1): 1,  # key k held behind its dead letter for 2 min
        ("auditor", 0): 0,
        ("auditor", 1): 0,
    }


def test_it_counts_the_blocked_keys_the_lock_owner_reports(
    client: Client, redis_client: redis.Redis
) -> None:
    _build_state(redis_client)

    blocked = _per_queue(_scrape(client), "lockstep_queue_blocked_keys")

    assert blocked == {cell: 2.0 if cell == ("mailer", 0) else 0.0 for cell in EVERY_QUEUE}


def test_it_counts_held_keys_and_the_dead_letters_waiting(
    client: Client, redis_client: redis.Redis
) -> None:
    _build_state(redis_client)

    families = _scrape(client)

    held = _per_queue(families, "lockstep_queue_held_keys")
    assert held == {cell: 1.0 if cell == ("mailer", 1) else 0.0 for cell in EVERY_QUEUE}
    assert (
        value_of(
            families, "lockstep_queue_parked_messages", topic="orders", group="mailer", queue=1
        )
        == 2
    )
    waiting = _per_queue(families, "lockstep_dead_letters_waiting")
    assert waiting == {cell: 3.0 if cell == ("mailer", 1) else 0.0 for cell in EVERY_QUEUE}


def test_it_tells_silent_consumers_from_live_ones(
    client: Client, redis_client: redis.Redis
) -> None:
    _build_state(redis_client)

    families = _scrape(client)

    assert value_of(families, "lockstep_consumers", topic="orders", group="mailer") == 1
    assert value_of(families, "lockstep_consumers", topic="orders", group="auditor") == 0
    assert value_of(families, "lockstep_consumers_silent", topic="orders", group="mailer") == 0
    assert value_of(families, "lockstep_consumers_silent", topic="orders", group="auditor") == 1


def test_a_dead_letter_replayed_or_discarded_no_longer_waits(
    client: Client, redis_client: redis.Redis
) -> None:
    first, *_ = _build_state(redis_client)

    redis_client.xdel(keys.dead_letters(QueueRef("orders", 1), "mailer"), first)

    waiting = _per_queue(_scrape(client), "lockstep_dead_letters_waiting")
    assert waiting[("mailer", 1)] == 2
