"""The demo's billing group (``make run``): poison orders are dead-lettered and hold their
key until an operator fixes the handler (``demo_poison fix``) and replays them; then the
replay succeeds and the key is released."""

from __future__ import annotations

import io
import json

import pytest
import redis
from django.core.management import call_command

from lockstep.workers import Consumer, Producer, QueueRef, create_topic
from lockstep.workers.config import Subscription, subscriptions_from_json
from lockstep.workers.dead_letters import ReplayOutcome, replay
from lockstep.workers.inspect import holds, list_dead_letters
from tests.support import wait_until
from tests.workers.harness import FAST, events

STEPS = ("created", "paid", "shipped", "completed")


def _billing_subscription(settings_subscriptions: str) -> list[Subscription]:
    return [s for s in subscriptions_from_json(settings_subscriptions) if s.group == "billing"]


def test_it_dead_letters_a_poison_order_until_fixed_and_then_replays_it_in_order(
    redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lockstep.dashboard import settings as project_settings

    monkeypatch.setenv("LOCKSTEP_DEMO_POISON_EVERY", "5")
    create_topic(redis_client, "orders", 1)
    producer = Producer(redis_url)
    for step in STEPS:
        for order in ("order-4", "order-5"):
            producer.send("orders", order, json.dumps({"step": step}).encode())
    (billing,) = _billing_subscription(project_settings.DEMO_SUBSCRIPTIONS)
    consumer = Consumer(redis_url, [billing], timings=FAST, consumer_id="demo-billing")
    consumer.start()
    try:
        (letter,) = wait_until(
            lambda: list_dead_letters(redis_client, "orders", "billing"), 30, "a dead letter"
        )
        assert (letter.key, letter.offset) == ("order-5", 1)
        assert "demo: card declined for order-5" in letter.error
        ref = QueueRef("orders", 0)
        wait_until(lambda: holds(redis_client, ref, "billing").get("order-5"), 10, "the hold")

        out = io.StringIO()
        call_command("demo_poison", "fix", stdout=out)
        assert out.getvalue().strip() == "demo billing handler: fixed"
        assert replay(redis_client, ref, "billing", letter.id).outcome is ReplayOutcome.IN_PLACE

        wait_until(lambda: not holds(redis_client, ref, "billing"), 20, "the key's release")
        wait_until(lambda: events(redis_client, "replay_succeeded"), 10, "the replay event")
    finally:
        consumer.stop()
        producer.close()
    assert list_dead_letters(redis_client, "orders", "billing") == []
