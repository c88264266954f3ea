"""Lag in time: now (Redis time) minus the produce time of the oldest message not yet
consumed, or parked behind a held key; 0 when caught up. Checked to the millisecond on
streams written by hand (the produce script's layout: entry ``<offset>-1``, field ``t``)
and on messages sent by the real producer between two readings of Redis time."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

from lockstep.workers import create_topic, keys
from lockstep.workers.inspect import overview, queue_state
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group
from tests.dashboard.helpers import produce

TOLERANCE_S = 0.001  # time_lag_s is rounded to the millisecond


def _now_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def _write_queue(
    client: redis.Redis, produced_ms: list[int], topic: str = "orders", queue: int = 0
) -> None:
    ref = QueueRef(topic, queue)
    for offset, t in enumerate(produced_ms):
        client.xadd(
            keys.stream(ref), {"k": f"k{offset}", "b": b"x", "h": "{}", "t": t}, id=f"{offset}-1"
        )
    client.set(keys.sequence(ref), len(produced_ms))


def _commit(
    client: redis.Redis, offset: int, completed: str = "", group: str = "mailer", queue: int = 0
) -> None:
    client.hset(
        keys.offset(QueueRef("orders", queue), group),
        mapping={"committed": offset, "token": 1, "completed": completed},
    )


def _park(
    client: redis.Redis,
    key: str,
    messages: list[tuple[int, int]],
    group: str = "mailer",
    queue: int = 0,
) -> None:
    """Hold ``key`` with parked (offset, produced_ms) messages, as the park script does."""
    ref = QueueRef("orders", queue)
    client.hset(keys.parked_keys(ref, group), key, json.dumps({"state": "held"}))
    client.zadd(
        keys.parked_messages(ref, group, key),
        {json.dumps({"o": o, "k": key, "t": t, "b": "", "h": {}, "r": 0}): o for o, t in messages},
    )


def _measure(client: redis.Redis, read: Callable[[], float]) -> tuple[int, float, int]:
    before = _now_ms(client)
    value = read()
    return before, value, _now_ms(client)


def _queue_lag(client: redis.Redis, group: str = "mailer", queue: int = 0) -> float:
    state = queue_state(client, QueueRef("orders", queue))
    (g,) = [g for g in state["groups"] if g["group"] == group]
    value: float = g["time_lag_s"]
    return value


def _overview_lag(client: redis.Redis, group: str = "mailer", queue: int = 0) -> float:
    (topic,) = overview(client)["topics"]
    (g,) = [g for g in topic["queues"][queue]["groups"] if g["group"] == group]
    value: float = g["time_lag_s"]
    return value


def _assert_lag_since(measured: tuple[int, float, int], produced_ms: int) -> None:
    before, value, after = measured
    low = (before - produced_ms) / 1000 - TOLERANCE_S
    high = (after - produced_ms) / 1000 + TOLERANCE_S
    assert low <= value <= high, (low, value, high)


@pytest.fixture
def orders(redis_client: redis.Redis) -> redis.Redis:
    create_topic(redis_client, "orders", 2)
    register_group(redis_client, "orders", "mailer")
    return redis_client


@pytest.mark.parametrize("read", [_queue_lag, _overview_lag], ids=["queue_state", "overview"])
def test_it_measures_from_the_oldest_unconsumed_message(
    orders: redis.Redis, read: Callable[..., float]
) -> None:
    now = _now_ms(orders)
    produced = [now - 9000, now - 7000, now - 5250, now - 3000, now - 1000]
    _write_queue(orders, produced)
    _commit(orders, 2)  # offsets 0 and 1 done; offset 2 is the oldest waiting

    _assert_lag_since(_measure(orders, lambda: read(orders)), produced[2])


@pytest.mark.parametrize("read", [_queue_lag, _overview_lag], ids=["queue_state", "overview"])
def test_it_is_zero_when_caught_up(orders: redis.Redis, read: Callable[..., float]) -> None:
    now = _now_ms(orders)
    _write_queue(orders, [now - 9000, now - 7000])
    _commit(orders, 2)

    assert read(orders) == 0.0


def test_it_skips_offsets_completed_above_the_low_water_mark(orders: redis.Redis) -> None:
    now = _now_ms(orders)
    produced = [now - 9000, now - 8000, now - 7000, now - 6000, now - 5000]
    _write_queue(orders, produced)
    _commit(orders, 1, completed="2-4")  # key ordering: only offset 1 is still waiting

    _assert_lag_since(_measure(orders, lambda: _queue_lag(orders)), produced[1])


def test_it_counts_a_parked_message_older_than_anything_unconsumed(orders: redis.Redis) -> None:
    now = _now_ms(orders)
    produced = [now - 9000, now - 8000, now - 7000, now - 2000]
    _write_queue(orders, produced)
    _commit(orders, 3)
    _park(orders, "order-1", [(1, produced[1]), (2, produced[2])])

    _assert_lag_since(_measure(orders, lambda: _queue_lag(orders)), produced[1])
    _assert_lag_since(_measure(orders, lambda: _overview_lag(orders)), produced[1])


def test_it_ignores_a_parked_message_newer_than_the_oldest_unconsumed(orders: redis.Redis) -> None:
    now = _now_ms(orders)
    produced = [now - 9000, now - 8000, now - 7000, now - 6000]
    _write_queue(orders, produced)
    _commit(orders, 1)
    _park(orders, "order-3", [(3, produced[3])])

    _assert_lag_since(_measure(orders, lambda: _queue_lag(orders)), produced[1])


def test_it_measures_parked_messages_when_everything_else_is_consumed(orders: redis.Redis) -> None:
    now = _now_ms(orders)
    produced = [now - 9000, now - 8000, now - 7000]
    _write_queue(orders, produced)
    _commit(orders, 3)
    _park(orders, "order-0", [(0, produced[0])])

    state = queue_state(orders, QueueRef("orders", 0))["groups"][0]
    assert state["lag"] == 1
    _assert_lag_since(_measure(orders, lambda: _queue_lag(orders)), produced[0])


def test_it_keeps_groups_apart(orders: redis.Redis) -> None:
    register_group(orders, "orders", "auditor")
    now = _now_ms(orders)
    produced = [now - 9000, now - 4000]
    _write_queue(orders, produced)
    _commit(orders, 1, group="mailer")
    _commit(orders, 2, group="auditor")

    _assert_lag_since(_measure(orders, lambda: _queue_lag(orders, "mailer")), produced[1])
    assert _queue_lag(orders, "auditor") == 0.0


def test_it_matches_redis_time_for_messages_the_producer_sent(
    orders: redis.Redis, redis_url: str
) -> None:
    not_before = _now_ms(orders)
    (first,) = produce(redis_url, "orders", ["order-9"])
    not_after = _now_ms(orders)
    produce(redis_url, "orders", ["order-9"] * 3)
    time.sleep(0.25)
    queue: Any = first.queue

    before, value, after = _measure(orders, lambda: _queue_lag(orders, queue=queue))

    # Redis stamped the message between not_before and not_after.
    assert (before - not_after) / 1000 - TOLERANCE_S <= value
    assert value <= (after - not_before) / 1000 + TOLERANCE_S
    assert value >= 0.25
