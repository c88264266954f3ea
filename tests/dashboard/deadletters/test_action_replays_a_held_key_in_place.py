"""On the real runtime, under ``after_dlq = hold``: the API's replay of the dead letter
that holds its key puts it back in place, it runs before the key's parked messages, and
they follow in their original order; discarding the held message instead releases them
without it."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.deadletters.models import DeadLetter, Status
from lockstep.dashboard.deadletters.sync import sync_all
from lockstep.workers import Producer, create_topic
from lockstep.workers.config import AfterDlq, Ordering
from lockstep.workers.inspect import held_keys
from lockstep.workers.message import ConsumeContext, ConsumeStatus, Message
from tests.dashboard.deadletters.action_helpers import ACTIONS_PATH, GROUP, TOPIC, post
from tests.dashboard.scenarios import FailOn, consuming
from tests.support import probe_until

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]

POISON = "order-13"
OPTIONS: dict[str, Any] = {
    "ordering": Ordering.KEY,
    "after_dlq": AfterDlq.HOLD,
    "max_reconsume_times": 0,
    "retry_initial_ms": 10,
    "retry_max_ms": 10,
}


class InOrder(FailOn):
    """``FailOn`` that also remembers the order it handled each key's offsets in."""

    def __init__(self, *failing: str) -> None:
        super().__init__(*failing)
        self.order: list[int] = []
        self._order_lock = threading.Lock()

    def __call__(self, messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
        status = super().__call__(messages, ctx)
        with self._order_lock:
            self.order += [m.offset for m in messages]
        return status


@pytest.fixture(autouse=True)
def no_rate_limit(settings: Any) -> None:
    settings.LOCKSTEP_REPLAY_RATE_PER_S = 0


def _held(client: redis.Redis, redis_url: str, handler: InOrder) -> list[int]:
    """Send 4 messages of the poison key; wait until the first holds the key with 3
    parked behind it. Returns their offsets."""
    producer = Producer(redis_url)
    offsets = [producer.send(TOPIC, POISON, b'{"n": %d}' % n).offset for n in range(4)]
    producer.close()
    probe_until(
        lambda: held_keys(client, TOPIC, GROUP),
        lambda h: len(h) == 1 and h[0]["messages"] == 3,
        timeout=20,
    )
    return offsets


def test_it_replays_the_held_message_in_place_before_the_parked_ones(
    redis_client: redis.Redis, redis_url: str, client: Client, operator: User
) -> None:
    create_topic(redis_client, TOPIC, 1)
    handler = InOrder(POISON)
    client.force_login(operator)
    with consuming(redis_url, TOPIC, GROUP, handler, **OPTIONS):
        offsets = _held(redis_client, redis_url, handler)
        sync_all(redis_client)
        record = DeadLetter.objects.get()
        handler.failing.clear()  # the handler is fixed

        answer = post(
            client,
            ACTIONS_PATH,
            {"action": "replay", "request_id": "hold-1234", "ids": [record.pk]},
        )
        probe_until(handler.count, lambda n: n >= 4, timeout=20)

    assert answer.status_code == 202
    assert answer.json()["outcomes"] == {"in_place": 1}
    assert handler.order == offsets
    record.refresh_from_db()
    assert record.status == Status.REPLAYED
    assert held_keys(redis_client, TOPIC, GROUP) == []


def test_it_releases_the_parked_messages_when_the_held_one_is_discarded(
    redis_client: redis.Redis, redis_url: str, client: Client, operator: User
) -> None:
    create_topic(redis_client, TOPIC, 1)
    handler = InOrder(POISON)
    client.force_login(operator)
    with consuming(redis_url, TOPIC, GROUP, handler, **OPTIONS):
        offsets = _held(redis_client, redis_url, handler)
        sync_all(redis_client)
        record = DeadLetter.objects.get()
        handler.failing.clear()

        answer = post(
            client,
            ACTIONS_PATH,
            {"action": "discard", "request_id": "hold-5678", "ids": [record.pk], "reason": "bad"},
        )
        probe_until(handler.count, lambda n: n >= 3, timeout=20)

    assert answer.json()["outcomes"] == {"discarded": 1}
    assert handler.order == offsets[1:]
    record.refresh_from_db()
    assert record.status == Status.DISCARDED
