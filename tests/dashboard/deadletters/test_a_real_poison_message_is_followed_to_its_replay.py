"""End to end on the real runtime: a poison message under key ordering with
``after_dlq = hold`` is dead-lettered, synced with its attempts, shown with the messages
parked behind it; once the handler is fixed and the dead letter replayed, the runtime's
events move the record to ``replayed`` and then ``succeeded``."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.deadletters.models import DeadLetter, Status
from lockstep.dashboard.deadletters.sync import sync_all
from lockstep.workers import Producer, create_topic
from lockstep.workers.config import AfterDlq, Ordering
from lockstep.workers.dead_letters import ReplayOutcome, replay
from lockstep.workers.inspect import held_keys, list_dead_letters
from lockstep.workers.refs import QueueRef
from tests.dashboard.scenarios import FailOn, consuming, ingest_all
from tests.support import probe_until

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]

TOPIC, GROUP, POISON, OTHER = "orders", "billing", "order-13", "order-14"
OPTIONS: dict[str, Any] = {
    "ordering": Ordering.KEY,
    "after_dlq": AfterDlq.HOLD,
    "max_reconsume_times": 1,
    "retry_initial_ms": 20,
    "retry_max_ms": 50,
}


def _status(client: redis.Redis, dlq_id: str, wanted: str) -> str:
    def probe() -> str:
        ingest_all(client)
        sync_all(client)
        return DeadLetter.objects.get(dlq_id=dlq_id).status

    return probe_until(probe, lambda s: s == wanted, timeout=20, interval=0.1)


def test_it_follows_a_poison_message_from_dead_letter_to_successful_replay(
    redis_client: redis.Redis, redis_url: str, client: Client, operator: User
) -> None:
    create_topic(redis_client, TOPIC, 1)
    handler = FailOn(POISON, error="card declined")
    producer = Producer(redis_url)
    with consuming(redis_url, TOPIC, GROUP, handler, **OPTIONS):
        offsets = [producer.send(TOPIC, POISON, b'{"n": %d}' % n).offset for n in range(3)]
        producer.send(TOPIC, OTHER, b'{"n": 0}')
        held = probe_until(
            lambda: held_keys(redis_client, TOPIC, GROUP),
            lambda h: len(h) == 1 and h[0]["messages"] == 2,
            timeout=20,
        )
        letters = list_dead_letters(redis_client, TOPIC, GROUP)
        sync_all(redis_client)
        record = DeadLetter.objects.get()
        client.force_login(operator)
        shown = client.get(f"/api/v1/groups/{GROUP}/dead-letters/{record.pk}").json()

        handler.failing.clear()
        replayed = replay(
            redis_client, QueueRef(TOPIC, 0), GROUP, record.dlq_id, replay_id="req-1", actor="op"
        )
        finally_ = _status(redis_client, record.dlq_id, Status.SUCCEEDED)
        handled = probe_until(handler.count, lambda n: n >= 4, timeout=20)
    producer.close()

    assert held[0]["dlq_id"] == letters[0].id == record.dlq_id
    assert (record.key, record.offset, record.after_dlq) == (POISON, offsets[0], "hold")
    assert record.reconsume_times == 1
    assert [a["error"] for a in record.attempts] == ["RuntimeError: card declined"] * 2
    assert all("card declined" in a["traceback"] for a in record.attempts)
    assert shown["hold"] == {
        "state": "held",
        "dlq_id": record.dlq_id,
        "held_by_this": True,
        "since_ms": held[0]["since_ms"],
        "parked_messages": 2,
    }
    assert shown["body"]["pretty"] == '{\n  "n": 0\n}'
    assert replayed.outcome == ReplayOutcome.IN_PLACE
    assert finally_ == Status.SUCCEEDED
    assert handled == 4
    history = [
        (h["status"], h["actor"], h["request_id"])
        for h in client.get(f"/api/v1/groups/{GROUP}/dead-letters/{record.pk}").json()["history"]
    ]
    assert history == [("dead", "", ""), ("replayed", "op", "req-1"), ("succeeded", "", "req-1")]
