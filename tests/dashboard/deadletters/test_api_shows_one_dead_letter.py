"""GET /api/v1/groups/<group>/dead-letters/<id>: the body as pretty JSON, text or hex,
headers, attempts, status history, links between a dead letter and its failed replay;
bodies and headers hidden from viewers when LOCKSTEP_HIDE_BODIES_FROM_VIEWERS is set."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.deadletters.models import DeadLetter
from lockstep.dashboard.deadletters.present import BODY_HEX_LIMIT, BODY_TEXT_LIMIT
from lockstep.workers.message import REPLAY_OF_HEADER
from tests.dashboard.deadletters.helpers import T0_MS, add_dead_letter, attempt, make_group, synced

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]


def _show(client: Client, record: DeadLetter, status: int = 200) -> dict[str, Any]:
    response = client.get(f"/api/v1/groups/{record.group}/dead-letters/{record.pk}")
    assert response.status_code == status, response.content
    body: dict[str, Any] = response.json()
    return body


def _with_body(client: redis.Redis, body: bytes) -> DeadLetter:
    make_group(client)
    return synced(client, add_dead_letter(client, body=body))


def test_it_shows_a_json_body_pretty_and_as_sent(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    record = _with_body(redis_client, b'{"order": 7, "items": ["a"]}')
    client.force_login(viewer)

    body = _show(client, record)["body"]

    assert body == {
        "size": 28,
        "kind": "json",
        "text": '{"order": 7, "items": ["a"]}',
        "pretty": '{\n  "order": 7,\n  "items": [\n    "a"\n  ]\n}',
        "truncated": False,
    }


def test_it_shows_a_text_body_as_text(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    record = _with_body(redis_client, "<script>alert('é')</script>".encode())
    client.force_login(viewer)

    body = _show(client, record)["body"]

    assert body["kind"] == "text"
    assert body["text"] == "<script>alert('é')</script>"


def test_it_shows_a_body_that_is_not_utf8_as_hex_with_its_size(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    record = _with_body(redis_client, b"\x00\xff\xfe binary")
    client.force_login(viewer)

    body = _show(client, record)["body"]

    assert body == {"size": 10, "kind": "binary", "hex": "00fffe2062696e617279", "truncated": False}


def test_it_cuts_huge_bodies_and_says_so(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    text = synced(redis_client, add_dead_letter(redis_client, body=b"a" * (BODY_TEXT_LIMIT + 5)))
    binary = synced(
        redis_client, add_dead_letter(redis_client, offset=1, body=b"\xff" * (3 * BODY_HEX_LIMIT))
    )
    client.force_login(viewer)

    shown_text = _show(client, text)["body"]
    shown_binary = _show(client, binary)["body"]

    assert (shown_text["size"], len(shown_text["text"]), shown_text["truncated"]) == (
        BODY_TEXT_LIMIT + 5,
        BODY_TEXT_LIMIT,
        True,
    )
    assert (shown_binary["size"], len(shown_binary["hex"]), shown_binary["truncated"]) == (
        3 * BODY_HEX_LIMIT,
        2 * BODY_HEX_LIMIT,
        True,
    )


def test_it_survives_json_nested_too_deep_to_parse(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    record = _with_body(redis_client, b"[" * 100_000 + b"]" * 100_000)
    client.force_login(viewer)

    assert _show(client, record)["body"]["kind"] == "text"


def test_it_shows_headers_attempts_and_history(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    record = synced(
        redis_client,
        add_dead_letter(
            redis_client,
            headers={"source": "checkout"},
            attempts=[
                attempt("RuntimeError: a", T0_MS - 2000, "Traceback (a)"),
                attempt("RuntimeError: b", T0_MS - 1000, "Traceback (b)"),
            ],
        ),
    )
    client.force_login(viewer)

    shown = _show(client, record)

    assert shown["headers"] == {"source": "checkout"}
    assert shown["body_hidden"] is False
    assert shown["attempts"] == [
        {"at_ms": T0_MS - 2000, "error": "RuntimeError: a", "traceback": "Traceback (a)"},
        {"at_ms": T0_MS - 1000, "error": "RuntimeError: b", "traceback": "Traceback (b)"},
    ]
    assert shown["history"] == [
        {
            "status": "dead",
            "at": "2026-11-21T10:30:00+00:00",
            "at_ms": T0_MS,
            "actor": "",
            "request_id": "",
            "note": "dead-lettered after 3 retries",
        }
    ]
    assert shown["hold"] is None  # nothing holds the key in Redis


def test_it_links_a_dead_letter_and_its_replay_that_died_again(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    first = synced(redis_client, add_dead_letter(redis_client, offset=3))
    again = synced(
        redis_client,
        add_dead_letter(redis_client, offset=9, headers={REPLAY_OF_HEADER: first.dlq_id}),
    )
    client.force_login(viewer)

    shown_first = _show(client, first)
    shown_again = _show(client, again)

    assert (shown_first["status"], shown_first["dead_again_as"]) == ("dead_again", [again.pk])
    assert (shown_again["replay_of"], shown_again["replay_of_id"]) == (first.dlq_id, first.pk)


@pytest.mark.parametrize("hide", [False, True])
def test_it_hides_bodies_and_headers_from_viewers_only_when_configured(
    client: Client,
    viewer: User,
    operator: User,
    redis_client: redis.Redis,
    settings: Any,
    hide: bool,
) -> None:
    settings.LOCKSTEP_HIDE_BODIES_FROM_VIEWERS = hide
    make_group(redis_client)
    record = synced(redis_client, add_dead_letter(redis_client, headers={"card": "4111"}))

    client.force_login(viewer)
    as_viewer = _show(client, record)
    client.force_login(operator)
    as_operator = _show(client, record)

    assert (as_viewer["body"] is None, as_viewer["headers"] is None) == (hide, hide)
    assert as_viewer["body_hidden"] is hide
    assert as_operator["body"]["text"] == '{"step": "paid"}'
    assert as_operator["headers"] == {"card": "4111"}


@pytest.mark.parametrize(
    ("path", "status", "error"),
    [
        ("billing/dead-letters/999", 404, "no dead letter 999 in group 'billing'"),
        ("billing/dead-letters/abc", 400, "id must be a whole number, got 'abc'"),
        ("billing/dead-letters/-1", 400, "id must be >= 0, got -1"),
        ("mailer/dead-letters/{pk}", 404, "no dead letter {pk} in group 'mailer'"),
    ],
)
def test_it_answers_unknown_or_bad_ids_with_json(
    client: Client, viewer: User, redis_client: redis.Redis, path: str, status: int, error: str
) -> None:
    make_group(redis_client)
    record = synced(redis_client, add_dead_letter(redis_client))
    client.force_login(viewer)

    response = client.get(f"/api/v1/groups/{path.format(pk=record.pk)}")

    assert response.status_code == status
    assert response.json() == {"error": error.format(pk=record.pk)}
