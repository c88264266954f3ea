"""``manage.py dlq list|show``: syncs first, filters like the API, prints one JSON
document with ``--json``; clear errors, non-zero exit, for unknown groups and ids."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import call_command
from django.core.management.base import CommandError

from lockstep.dashboard.deadletters.models import DeadLetter, Status
from tests.dashboard.deadletters.helpers import T0_MS, add_dead_letter, make_group

pytestmark = pytest.mark.django_db


def _dlq(*args: str) -> str:
    out = StringIO()
    call_command("dlq", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def _json(*args: str) -> Any:
    return json.loads(_dlq(*args, "--json"))


def _fill(client: redis.Redis) -> None:
    make_group(client)
    for i in range(6):
        add_dead_letter(
            client,
            queue=i % 2,
            offset=i,
            key=f"order-{i % 3}",
            error=f"RuntimeError: failure {i}",
            dead_at_ms=T0_MS + i * 1000,
        )


def test_it_syncs_first_and_lists_the_items_as_json(redis_client: redis.Redis) -> None:
    _fill(redis_client)

    document = _json("list", "--group", "billing")

    assert DeadLetter.objects.count() == 6
    assert [i["offset"] for i in document["items"]] == [5, 4, 3, 2, 1, 0]
    first = document["items"][0]
    assert {
        k: first[k]
        for k in ("topic", "queue", "offset", "key", "status", "reconsume_times", "error")
    } == {
        "topic": "orders",
        "queue": 1,
        "offset": 5,
        "key": "order-2",
        "status": "dead",
        "reconsume_times": 3,
        "error": "RuntimeError: failure 5",
    }
    assert first["id"] == DeadLetter.objects.get(offset=5).pk
    assert first["dead_lettered_at"] == "2026-11-21T10:30:05+00:00"
    assert (document["next_cursor"], document["count_waiting"]) == (None, 6)


def test_it_filters_like_the_api(redis_client: redis.Redis) -> None:
    _fill(redis_client)
    _dlq("list", "--group", "billing")
    DeadLetter.objects.get(offset=3).move_to(Status.DISCARDED)

    by_queue_and_key = _json("list", "--group", "billing", "--queue", "1", "--key", "order-0")
    discarded = _json("list", "--group", "billing", "--status", "discarded")
    paged = _json("list", "--group", "billing", "--limit", "4")
    rest = _json("list", "--group", "billing", "--cursor", paged["next_cursor"])

    assert [i["offset"] for i in by_queue_and_key["items"]] == [3]
    assert [i["offset"] for i in discarded["items"]] == [3]
    assert [i["offset"] for i in paged["items"] + rest["items"]] == [5, 4, 3, 2, 1, 0]


def test_it_prints_a_readable_table_without_json(redis_client: redis.Redis) -> None:
    _fill(redis_client)

    lines = _dlq("list", "--group", "billing", "--limit", "2").splitlines()

    assert lines[0].split()[:3] == ["ID", "STATUS", "WHERE"]
    assert "orders/1@5" in lines[1]
    assert "RuntimeError: failure 5" in lines[1]
    assert lines[-2] == "2 shown, 6 waiting"
    assert lines[-1].startswith("more: --cursor ")


def test_it_shows_one_dead_letter_in_full(redis_client: redis.Redis) -> None:
    _fill(redis_client)
    _dlq("list", "--group", "billing")
    record = DeadLetter.objects.get(offset=2)

    shown = _json("show", "--group", "billing", "--ids", str(record.pk))
    text = _dlq("show", "--group", "billing", "--ids", str(record.pk))

    assert (shown["id"], shown["offset"], shown["key"]) == (record.pk, 2, "order-2")
    assert shown["body"]["pretty"] == '{\n  "step": "paid"\n}'
    assert [h["status"] for h in shown["history"]] == ["dead"]
    assert f"dead letter {record.pk} (dead): orders queue 0 offset 2" in text
    assert "body (json, 16 bytes):" in text


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["list", "--group", "ghosts"], "no consumer group 'ghosts'"),
        (["list", "--group", "billing", "--status", "lost"], "unknown status 'lost'"),
        (["list", "--group", "billing", "--limit", "0"], "--limit must be 1..500"),
        (["list", "--group", "billing", "--cursor", "junk"], "cursor is not one this list"),
        (["show", "--group", "billing"], "show takes exactly one id"),
        (["show", "--group", "billing", "--ids", "x"], "id must be a whole number"),
        (["show", "--group", "billing", "--ids", "424242"], "no dead letter 424242"),
    ],
)
def test_it_fails_with_a_clear_message(
    redis_client: redis.Redis, args: list[str], error: str
) -> None:
    _fill(redis_client)

    with pytest.raises(CommandError, match=error):
        _dlq(*args)
