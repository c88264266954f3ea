"""The dry run changes nothing and says what a replay or discard would mean: how many
messages, which keys and queues, what is skipped and why, and what it means for order —
under ``hold`` (read from the held keys in Redis), ``continue`` and queue ordering."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.deadletters.models import ActionRequest, AuditEntry, DeadLetter, Status
from lockstep.dashboard.deadletters.sync import sync_all
from lockstep.workers import Producer, create_topic
from lockstep.workers.config import AfterDlq, Ordering
from lockstep.workers.inspect import held_keys
from tests.dashboard.deadletters.action_helpers import (
    ACTIONS_PATH,
    GROUP,
    TOPIC,
    dead_letters_in_redis,
    fill,
    post,
    replayed_messages,
)
from tests.dashboard.scenarios import FailOn, consuming
from tests.support import probe_until

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]


@pytest.fixture(autouse=True)
def rate(settings: Any) -> None:
    settings.LOCKSTEP_REPLAY_RATE_PER_S = 25


def _dry_run(client: Client, action: str = "replay", **selection: Any) -> Any:
    body = {"action": action, "request_id": "dry-run-0001", "dry_run": True, **selection}
    answer = post(client, ACTIONS_PATH, body)
    assert answer.status_code == 200, answer.content
    return answer.json()


def _unchanged(client: redis.Redis, statuses: list[tuple[int, str]], waiting: int) -> None:
    assert list(DeadLetter.objects.order_by("pk").values_list("pk", "status")) == statuses
    assert dead_letters_in_redis(client) == waiting
    assert replayed_messages(client) == []
    assert ActionRequest.objects.count() == 0
    assert AuditEntry.objects.count() == 0


def test_it_counts_keys_and_queues_and_explains_continue(
    redis_client: redis.Redis, client: Client, operator: User
) -> None:
    fill(redis_client, keys_count=25, per_key=2)  # order-0..24 on queues k % 4
    sync_all(redis_client)
    DeadLetter.objects.filter(key="order-3").update(status=Status.REPLAYED)
    statuses = list(DeadLetter.objects.order_by("pk").values_list("pk", "status"))
    client.force_login(operator)

    plan = _dry_run(client, filter={})

    assert plan["dry_run"] is True
    assert (plan["action"], plan["count"], plan["skipped"], plan["key_count"]) == (
        "replay",
        48,
        2,
        24,
    )
    assert plan["skipped_reasons"] == [
        {"status": "replayed", "count": 2, "reason": "already replayed"}
    ]
    assert len(plan["keys"]) == 20
    assert plan["keys"][0] == {"key": "order-0", "count": 2}
    assert plan["queues"] == [
        {"topic": TOPIC, "queue": 0, "count": 14},
        {"topic": TOPIC, "queue": 1, "count": 12},
        {"topic": TOPIC, "queue": 2, "count": 12},
        {"topic": TOPIC, "queue": 3, "count": 10},
    ]
    assert plan["order_notes"] == [
        "48 dead letters of 24 keys under after_dlq = continue: later messages of these "
        "keys were already handled; the replay is re-published after them, at the end of "
        "the queue.",
        "Each key's messages are replayed one at a time in their original offset order, "
        "at most 25 a second.",
    ]
    _unchanged(redis_client, statuses, 50)


def test_it_explains_queue_ordering_and_a_discard(
    redis_client: redis.Redis, client: Client, operator: User
) -> None:
    fill(redis_client, keys_count=2, per_key=1, ordering=Ordering.QUEUE)
    sync_all(redis_client)
    statuses = list(DeadLetter.objects.order_by("pk").values_list("pk", "status"))
    ids = [pk for pk, _ in statuses]
    client.force_login(operator)

    replay = _dry_run(client, ids=ids)
    discard = _dry_run(client, "discard", ids=ids[:1])

    assert replay["order_notes"][0] == (
        "2 dead letters under queue ordering: later messages of their queues were already "
        "handled; the replay is re-published after them, at the end of the queue."
    )
    assert (discard["count"], discard["order_notes"]) == (
        1,
        [
            "1 dead letter does not hold its key: the messages after it were already "
            "handled; discarding drops it for good."
        ],
    )
    _unchanged(redis_client, statuses, 2)


def test_it_says_a_held_key_replays_in_place_before_its_parked_messages(
    redis_client: redis.Redis, redis_url: str, client: Client, operator: User
) -> None:
    create_topic(redis_client, TOPIC, 1)
    producer = Producer(redis_url)
    options: dict[str, Any] = {
        "ordering": Ordering.KEY,
        "after_dlq": AfterDlq.HOLD,
        "max_reconsume_times": 0,
        "retry_initial_ms": 10,
        "retry_max_ms": 10,
    }
    with consuming(redis_url, TOPIC, GROUP, FailOn("order-13"), **options):
        for n in range(4):
            producer.send(TOPIC, "order-13", b'{"n": %d}' % n)
        held = probe_until(
            lambda: held_keys(redis_client, TOPIC, GROUP),
            lambda h: len(h) == 1 and h[0]["messages"] == 3,
            timeout=20,
        )
    producer.close()
    sync_all(redis_client)
    statuses = list(DeadLetter.objects.order_by("pk").values_list("pk", "status"))
    client.force_login(operator)

    replay = _dry_run(client, filter={"key": "order-13"})
    discard = _dry_run(client, "discard", filter={"key": "order-13"})

    assert held[0]["messages"] == 3
    assert (replay["count"], replay["keys"]) == (1, [{"key": "order-13", "count": 1}])
    assert replay["order_notes"][0] == (
        "1 dead letter holds its key (after_dlq = hold): it is replayed in place and runs "
        "before the key's 3 parked messages, which then run in their original order."
    )
    assert discard["order_notes"] == [
        "1 dead letter holds its key (after_dlq = hold): discarding it releases the key, "
        "and the 3 messages parked behind it run in their original order without it."
    ]
    _unchanged(redis_client, statuses, 1)
    assert held_keys(redis_client, TOPIC, GROUP)[0]["state"] == "held"
