"""A request's status (items and outcomes) and its cancel: cancelling a request that has
not run leaves every record ``dead`` (in Redis and the database) and is audited;
cancelling a finished request changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.deadletters import tasks
from lockstep.dashboard.deadletters.models import ActionRequest, AuditEntry, DeadLetter, Status
from lockstep.dashboard.deadletters.sync import sync_all
from tests.dashboard.deadletters.action_helpers import (
    ACTIONS_PATH,
    dead_letters_in_redis,
    fill,
    post,
    replayed_messages,
)

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]

STATUS = "/api/v1/dead-letter-requests/{}"


@pytest.fixture(autouse=True)
def no_rate_limit(settings: Any) -> None:
    settings.LOCKSTEP_REPLAY_RATE_PER_S = 0


@pytest.fixture
def synced(redis_client: redis.Redis) -> None:
    fill(redis_client, keys_count=3, per_key=4)
    sync_all(redis_client)


def test_it_cancels_a_request_that_has_not_run_and_leaves_every_record_dead(
    redis_client: redis.Redis, client: Client, operator: User, viewer: User, synced: None
) -> None:
    client.force_login(operator)
    # 12 messages: queued for Celery, and in this test's transaction never sent: it waits.
    body = {"action": "replay", "request_id": "to-cancel-1", "filter": {}, "reason": "fixed"}
    submitted = post(client, ACTIONS_PATH, body).json()
    pending = set(DeadLetter.objects.values_list("status", flat=True))

    cancelled = post(client, f"{STATUS.format('to-cancel-1')}/cancel", {})
    again = post(client, f"{STATUS.format('to-cancel-1')}/cancel", {})
    delivered_late = tasks.run_action("to-cancel-1")
    client.force_login(viewer)
    status = client.get(STATUS.format("to-cancel-1")).json()

    assert (submitted["state"], submitted["total"], submitted["done"]) == ("pending", 12, 0)
    assert pending == {Status.REPLAY_PENDING}
    assert cancelled.status_code == 200
    assert (cancelled.json()["state"], cancelled.json()["outcomes"]) == (
        "cancelled",
        {"skipped": 12},
    )
    assert again.json() == cancelled.json()
    assert delivered_late == "cancelled"
    assert set(DeadLetter.objects.values_list("status", flat=True)) == {Status.DEAD}
    assert dead_letters_in_redis(redis_client) == 12
    assert replayed_messages(redis_client) == []
    assert status["actor"] == "operator"
    assert status["finished_at"] is not None and status["created_at"]
    assert len(status["items"]) == 12
    first = status["items"][0]
    record = DeadLetter.objects.get(pk=first["id"])
    assert first == {
        "id": record.pk,
        "topic": "orders",
        "queue": 0,
        "offset": 0,
        "key": record.key,
        "outcome": "skipped",
        "detail": "cancelled before it ran",
        "at": first["at"],
    }
    assert [h.status for h in record.history.order_by("at", "id")] == [
        Status.DEAD,
        Status.REPLAY_PENDING,
        Status.DEAD,
    ]
    audit = [(e.action, e.actor, e.count, e.outcomes, e.reason) for e in AuditEntry.objects.all()]
    assert audit == [
        ("replay", "operator", 12, {"skipped": 12}, "fixed"),
        ("cancel_replay", "operator", 12, {}, ""),
    ]


def test_it_answers_a_cancel_of_a_finished_request_with_its_final_state(
    client: Client, operator: User, synced: None
) -> None:
    client.force_login(operator)
    one = DeadLetter.objects.order_by("pk").first()
    assert one is not None
    post(client, ACTIONS_PATH, {"action": "replay", "request_id": "finished-1", "ids": [one.pk]})

    cancelled = post(client, f"{STATUS.format('finished-1')}/cancel", {})

    assert cancelled.status_code == 200
    assert (cancelled.json()["state"], cancelled.json()["outcomes"]) == (
        "done",
        {"republished": 1},
    )
    assert ActionRequest.objects.get().state == "done"
    assert not AuditEntry.objects.filter(action="cancel_replay").exists()


def test_it_lists_the_audit_log_newest_first_with_filters(
    client: Client, operator: User, viewer: User, synced: None
) -> None:
    client.force_login(operator)
    first, second = DeadLetter.objects.order_by("pk").values_list("pk", flat=True)[:2]
    post(client, ACTIONS_PATH, {"action": "replay", "request_id": "audit-req-1", "ids": [first]})
    post(
        client,
        ACTIONS_PATH,
        {"action": "discard", "request_id": "audit-req-2", "ids": [second], "reason": "dup"},
    )
    client.force_login(viewer)

    everything = client.get("/api/v1/audit").json()["entries"]
    discards = client.get("/api/v1/audit?action=discard").json()["entries"]
    limited = client.get("/api/v1/audit?limit=1&group=billing").json()["entries"]
    bad = client.get("/api/v1/audit?limit=0")

    assert [(e["action"], e["request_id"]) for e in everything] == [
        ("discard", "audit-req-2"),
        ("replay", "audit-req-1"),
    ]
    assert discards[0] == {
        "id": discards[0]["id"],
        "at": discards[0]["at"],
        "actor": "operator",
        "action": "discard",
        "request_id": "audit-req-2",
        "group": "billing",
        "filter": {},
        "selection": [second],
        "reason": "dup",
        "count": 1,
        "outcomes": {"discarded": 1},
    }
    assert [e["request_id"] for e in limited] == ["audit-req-2"]
    assert bad.status_code == 400
