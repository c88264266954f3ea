"""Every action is a POST with a CSRF token and a permission check: a viewer gets 403 on
each and nothing changes (Redis and the database), an anonymous caller 401, a POST
without the token 403; bad input is a 400, never a 500."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.deadletters.models import (
    ActionRequest,
    AuditEntry,
    DeadLetter,
    StatusChange,
)
from lockstep.dashboard.deadletters.sync import sync_all
from tests.dashboard.deadletters.action_helpers import (
    ACTIONS_PATH,
    dead_letters_in_redis,
    fill,
    post,
    replayed_messages,
)

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]

CANCEL_PATH = "/api/v1/dead-letter-requests/{}/cancel"


@pytest.fixture(autouse=True)
def no_rate_limit(settings: Any) -> None:
    settings.LOCKSTEP_REPLAY_RATE_PER_S = 0


@pytest.fixture
def ids(redis_client: redis.Redis) -> list[int]:
    fill(redis_client, keys_count=2, per_key=2)
    sync_all(redis_client)
    return list(DeadLetter.objects.order_by("pk").values_list("pk", flat=True))


def _posts(ids: list[int]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (ACTIONS_PATH, {"action": "replay", "request_id": "viewer-try-1", "ids": ids}),
        (ACTIONS_PATH, {"action": "replay", "request_id": "viewer-try-2", "filter": {}}),
        (
            ACTIONS_PATH,
            {"action": "replay", "request_id": "viewer-try-3", "ids": ids, "dry_run": True},
        ),
        (
            ACTIONS_PATH,
            {"action": "discard", "request_id": "viewer-try-4", "ids": ids, "reason": "junk"},
        ),
        (CANCEL_PATH.format("operator-req-1"), {}),
    ]


def _state(client: redis.Redis) -> tuple[Any, ...]:
    return (
        dead_letters_in_redis(client),
        len(replayed_messages(client)),
        list(DeadLetter.objects.order_by("pk").values_list("pk", "status")),
        StatusChange.objects.count(),
        list(ActionRequest.objects.values_list("request_id", "state", "done")),
        AuditEntry.objects.count(),
    )


def _operator_request(client: Client, operator: User, ids: list[int]) -> None:
    """One finished request, so the cancel POSTs name a real one."""
    client.force_login(operator)
    body = {"action": "replay", "request_id": "operator-req-1", "ids": ids[:1]}
    assert post(client, ACTIONS_PATH, body).status_code == 202
    client.logout()


def test_it_answers_a_viewer_403_on_every_post_and_changes_nothing(
    redis_client: redis.Redis, client: Client, viewer: User, operator: User, ids: list[int]
) -> None:
    _operator_request(client, operator, ids)
    before = _state(redis_client)
    client.force_login(viewer)

    answers = [post(client, path, body) for path, body in _posts(ids)]

    assert [a.status_code for a in answers] == [403] * 5
    assert all("may not" in a.json()["error"] for a in answers)
    assert _state(redis_client) == before


def test_it_answers_an_anonymous_caller_401_on_every_post(
    redis_client: redis.Redis, client: Client, operator: User, ids: list[int]
) -> None:
    _operator_request(client, operator, ids)
    before = _state(redis_client)

    answers = [post(client, path, body) for path, body in _posts(ids)]

    assert [a.status_code for a in answers] == [401] * 5
    assert {a.json()["error"] for a in answers} == {"authentication required"}
    assert _state(redis_client) == before


def test_it_refuses_a_post_without_the_csrf_token(
    redis_client: redis.Redis, operator: User, ids: list[int]
) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(operator)
    browser.get("/login/")  # sets the csrftoken cookie, as any page does
    token = browser.cookies["csrftoken"].value
    body = {"action": "replay", "request_id": "csrf-test-1", "ids": ids[:1]}
    before = _state(redis_client)

    without = post(browser, ACTIONS_PATH, body)
    unchanged = _state(redis_client)
    with_token = post(browser, ACTIONS_PATH, body, HTTP_X_CSRFTOKEN=token)

    assert without.status_code == 403
    assert without.json()["error"].startswith("CSRF check failed")
    assert unchanged == before
    assert with_token.status_code == 202
    assert with_token.json()["outcomes"] == {"republished": 1}


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("not json", "must be a JSON object"),
        ([1, 2], "must be a JSON object"),
        ({"action": "rewind", "request_id": "bad-input-1", "ids": [1]}, "action must be"),
        ({"action": "replay", "request_id": "short", "ids": [1]}, "request_id must be"),
        ({"action": "replay", "request_id": "<script>x</script>", "ids": [1]}, "request_id"),
        ({"action": "replay", "request_id": "bad-input-1"}, "either ids"),
        ({"action": "replay", "request_id": "bad-input-1", "ids": [1], "filter": {}}, "either"),
        ({"action": "replay", "request_id": "bad-input-1", "ids": ["x"]}, "whole numbers"),
        ({"action": "replay", "request_id": "bad-input-1", "ids": []}, "at least one"),
        ({"action": "replay", "request_id": "bad-input-1", "ids": [999999]}, "no dead letter"),
        ({"action": "replay", "request_id": "bad-input-1", "filter": {"x": 1}}, "unknown filter"),
        (
            {"action": "replay", "request_id": "bad-input-1", "filter": {"status": "vanished"}},
            "unknown status",
        ),
        ({"action": "replay", "request_id": "bad-input-1", "filter": {"key": "none"}}, "nothing"),
        ({"action": "discard", "request_id": "bad-input-1", "ids": [1]}, "needs a reason"),
        ({"action": "replay", "request_id": "bad-input-1", "ids": [1], "dry_run": 1}, "true or"),
        ({"action": "replay", "request_id": "bad-input-1", "ids": [1], "extra": 1}, "unknown"),
    ],
)
def test_it_answers_bad_input_with_400_and_does_nothing(
    redis_client: redis.Redis,
    client: Client,
    operator: User,
    ids: list[int],
    body: Any,
    error: str,
) -> None:
    client.force_login(operator)
    before = _state(redis_client)
    if isinstance(body, dict) and body.get("ids") == [1]:
        body = {**body, "ids": ids[:1]}

    answer = (
        client.post(ACTIONS_PATH, data=body, content_type="application/json")
        if isinstance(body, str)
        else post(client, ACTIONS_PATH, body)
    )

    assert answer.status_code == 400, answer.content
    assert error in answer.json()["error"]
    assert _state(redis_client) == before


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        (Client.post, "/api/v1/groups/nobody/dead-letters/actions", 404),
        (Client.get, "/api/v1/dead-letter-requests/no-such-request", 404),
        (Client.post, "/api/v1/dead-letter-requests/no-such-request/cancel", 404),
        (Client.get, ACTIONS_PATH, 405),
    ],
)
def test_it_answers_unknown_groups_and_requests_404(
    client: Client,
    operator: User,
    ids: list[int],
    method: Callable[..., Any],
    path: str,
    status: int,
) -> None:
    client.force_login(operator)
    body = {"action": "replay", "request_id": "unknown-group-1", "filter": {}}

    answer = method(client, path, data=body, content_type="application/json")

    assert answer.status_code == status
    assert "error" in answer.json()
    assert ActionRequest.objects.count() == 0
