"""With Redis unreachable, an action answers 503 JSON (never a 500) and stores nothing;
a request's status is still readable from the database."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.deadletters.models import ActionRequest, DeadLetter, Status
from lockstep.dashboard.deadletters.sync import sync_all
from tests.dashboard.deadletters.action_helpers import ACTIONS_PATH, fill, post

pytestmark = pytest.mark.django_db


def test_it_answers_503_and_changes_nothing_while_redis_is_down(
    redis_client: redis.Redis, client: Client, operator: User, settings: Any, dead_redis_url: str
) -> None:
    settings.LOCKSTEP_REPLAY_RATE_PER_S = 0
    fill(redis_client, keys_count=1, per_key=2)
    sync_all(redis_client)
    first, second = DeadLetter.objects.order_by("pk")
    client.force_login(operator)
    post(
        client, ACTIONS_PATH, {"action": "replay", "request_id": "before-outage", "ids": [first.pk]}
    )
    settings.REDIS_URL = dead_redis_url

    replay = post(
        client, ACTIONS_PATH, {"action": "replay", "request_id": "in-outage-1", "ids": [second.pk]}
    )
    dry_run = post(
        client,
        ACTIONS_PATH,
        {"action": "replay", "request_id": "in-outage-2", "filter": {}, "dry_run": True},
    )
    status = client.get("/api/v1/dead-letter-requests/before-outage")

    assert (replay.status_code, dry_run.status_code) == (503, 503)
    assert replay.json()["error"].startswith("Redis is unavailable")
    assert list(ActionRequest.objects.values_list("request_id", flat=True)) == ["before-outage"]
    second.refresh_from_db()
    assert second.status == Status.DEAD
    assert status.status_code == 200
    assert status.json()["outcomes"] == {"republished": 1}
