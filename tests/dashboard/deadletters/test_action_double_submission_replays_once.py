"""The same request id submitted twice (a double click, a network retry) is one request:
the message is replayed once, in Redis as in the database; a request id reused for
another action is refused."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.deadletters import actions, tasks
from lockstep.dashboard.deadletters.models import (
    ActionItem,
    ActionRequest,
    AuditEntry,
    DeadLetter,
    Status,
)
from lockstep.dashboard.deadletters.plans import Selection
from lockstep.dashboard.deadletters.sync import sync_all
from tests.dashboard.deadletters.action_helpers import (
    ACTIONS_PATH,
    dead_letters_in_redis,
    fill,
    post,
    replayed_messages,
)

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]


@pytest.fixture(autouse=True)
def no_rate_limit(settings: Any) -> None:
    settings.LOCKSTEP_REPLAY_RATE_PER_S = 0


def _replay(client: Client, ids: list[int], request_id: str = "double-click-1") -> Any:
    return post(client, ACTIONS_PATH, {"action": "replay", "request_id": request_id, "ids": ids})


def test_it_replays_once_when_the_same_request_is_submitted_twice(
    redis_client: redis.Redis, client: Client, operator: User
) -> None:
    fill(redis_client, keys_count=1, per_key=1)
    client.force_login(operator)
    record = _synced_one(redis_client)

    first = _replay(client, [record.pk])
    second = _replay(client, [record.pk])

    assert first.status_code == 202
    assert second.status_code == 200
    assert first.json()["outcomes"] == {"republished": 1}
    assert second.json() == first.json()
    (message,) = replayed_messages(redis_client)
    assert message.headers["lockstep-replay-of"] == record.dlq_id
    assert message.headers["lockstep-replay-id"] == "double-click-1"
    assert dead_letters_in_redis(redis_client) == 0
    assert ActionRequest.objects.count() == 1
    assert ActionItem.objects.count() == 1
    assert AuditEntry.objects.filter(action="replay").count() == 1
    record.refresh_from_db()
    assert record.status == Status.REPLAYED
    replays = record.history.filter(status=Status.REPLAYED)
    assert [(h.actor, h.request_id) for h in replays] == [("operator", "double-click-1")]


def test_it_replays_once_when_a_second_request_names_the_same_message(
    redis_client: redis.Redis, client: Client, operator: User
) -> None:
    fill(redis_client, keys_count=1, per_key=2)
    client.force_login(operator)
    records = _synced(redis_client)
    ids = [r.pk for r in records]

    first = _replay(client, ids, "first-request")
    again = _replay(client, ids, "second-request")

    assert first.json()["outcomes"] == {"republished": 2}
    assert again.status_code == 400
    assert "nothing to replay" in again.json()["error"]
    assert "2 already replayed" in again.json()["error"]
    assert len(replayed_messages(redis_client)) == 2
    assert ActionRequest.objects.count() == 1


def test_it_refuses_a_request_id_reused_for_another_action(
    redis_client: redis.Redis, client: Client, operator: User
) -> None:
    fill(redis_client, keys_count=1, per_key=2)
    client.force_login(operator)
    first, second = _synced(redis_client)
    _replay(client, [first.pk], "reused-id-1")

    reused = post(
        client,
        ACTIONS_PATH,
        {"action": "discard", "request_id": "reused-id-1", "ids": [second.pk], "reason": "x"},
    )

    assert reused.status_code == 409
    assert "reused-id-1" in reused.json()["error"]
    second.refresh_from_db()
    assert second.status == Status.DEAD
    assert dead_letters_in_redis(redis_client) == 1


def test_it_runs_a_queued_task_delivered_twice_only_once(
    redis_client: redis.Redis, operator: User
) -> None:
    fill(redis_client, keys_count=3, per_key=4)
    records = _synced(redis_client)
    submitted = actions.submit(
        "operator", "billing", "replay", "queued-task-1", Selection.of_ids(r.pk for r in records)
    )
    # Not run yet: 12 messages go to Celery, and this test's transaction never commits, so
    # the task is not even queued; the test delivers it, twice.

    states = [tasks.run_action("queued-task-1"), tasks.run_action("queued-task-1")]

    assert submitted.created
    assert submitted.request.state == "pending"
    assert states == ["done", "done"]
    assert len(replayed_messages(redis_client)) == 12
    assert dead_letters_in_redis(redis_client) == 0
    assert AuditEntry.objects.filter(request_id="queued-task-1").count() == 1
    outcomes = list(ActionItem.objects.values_list("outcome", flat=True))
    assert outcomes == ["republished"] * 12


def _synced(client: redis.Redis) -> list[DeadLetter]:
    sync_all(client)
    return list(DeadLetter.objects.order_by("queue", "offset"))


def _synced_one(client: redis.Redis) -> DeadLetter:
    (record,) = _synced(client)
    return record
