"""``manage.py dlq replay|discard``: the same service as the API, run in the command
(not in Celery); ``--json`` prints one document (the plan for ``--dry-run``); the same
``--request-id`` again acts on nothing twice; bad input is a clear error with nothing
done."""

from __future__ import annotations

import getpass
import json
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import call_command
from django.core.management.base import CommandError

from lockstep.dashboard.deadletters.models import ActionRequest, AuditEntry, DeadLetter, Status
from tests.dashboard.deadletters.action_helpers import (
    GROUP,
    dead_letters_in_redis,
    fill,
    replayed_messages,
)

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]


@pytest.fixture(autouse=True)
def no_rate_limit(settings: Any) -> None:
    settings.LOCKSTEP_REPLAY_RATE_PER_S = 0


def _dlq(*args: str) -> Any:
    out = StringIO()
    call_command("dlq", *args, "--group", GROUP, "--json", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def _ids(**filters: Any) -> list[str]:
    records = DeadLetter.objects.filter(**filters).order_by("queue", "offset")
    return [str(pk) for pk in records.values_list("pk", flat=True)]


def test_it_replays_every_match_in_the_command_and_prints_each_outcome(
    redis_client: redis.Redis,
) -> None:
    fill(redis_client, keys_count=3, per_key=4)  # 12: more than a web request runs inline

    document = _dlq("replay", "--request-id", "cli-replay-1", "--actor", "ops-cli")

    records = list(DeadLetter.objects.order_by("queue", "offset"))
    assert {k: document[k] for k in ("request_id", "action", "state", "count", "outcomes")} == {
        "request_id": "cli-replay-1",
        "action": "replay",
        "state": "done",
        "count": 12,
        "outcomes": {"republished": 12},
    }
    assert [i["id"] for i in document["items"]] == [r.pk for r in records]
    assert {i["outcome"] for i in document["items"]} == {"republished"}
    assert document["items"][0]["detail"].startswith("re-published at offset ")
    assert {r.status for r in records} == {Status.REPLAYED}
    assert len(replayed_messages(redis_client)) == 12
    assert dead_letters_in_redis(redis_client) == 0
    (entry,) = AuditEntry.objects.all()
    assert (entry.actor, entry.action, entry.count, entry.outcomes) == (
        "ops-cli",
        "replay",
        12,
        {"republished": 12},
    )


def test_it_replays_nothing_twice_when_run_again_with_the_same_request_id(
    redis_client: redis.Redis,
) -> None:
    fill(redis_client, keys_count=2, per_key=2)
    _dlq("list")
    ids = _ids()

    first = _dlq("replay", "--ids", *ids[:2], "--request-id", "cli-again-1")
    again = _dlq("replay", "--ids", *ids, "--request-id", "cli-again-1")

    assert again == first
    assert first["outcomes"] == {"republished": 2}
    assert len(replayed_messages(redis_client)) == 2
    assert dead_letters_in_redis(redis_client) == 2
    assert ActionRequest.objects.count() == 1
    assert AuditEntry.objects.count() == 1


def test_it_discards_with_the_reason_and_the_os_user_by_default(
    redis_client: redis.Redis,
) -> None:
    fill(redis_client, keys_count=2, per_key=2)

    document = _dlq("discard", "--key", "order-1", "--reason", "test data, not real orders")

    discarded = DeadLetter.objects.filter(key="order-1")
    assert document["action"] == "discard"
    assert (document["count"], document["outcomes"]) == (2, {"discarded": 2})
    assert [i["detail"] for i in document["items"]] == ["test data, not real orders"] * 2
    assert {r.status for r in discarded} == {Status.DISCARDED}
    assert DeadLetter.objects.filter(status=Status.DEAD).count() == 2
    assert dead_letters_in_redis(redis_client) == 2
    assert replayed_messages(redis_client) == []
    note = discarded[0].history.get(status=Status.DISCARDED).note
    assert note == "discarded: test data, not real orders"
    assert AuditEntry.objects.get().actor == getpass.getuser()


def test_it_prints_the_plan_for_a_dry_run_and_changes_nothing(
    redis_client: redis.Redis,
) -> None:
    fill(redis_client, keys_count=2, per_key=3)

    plan = _dlq("replay", "--dry-run", "--queue", "1")
    discard_plan = _dlq("discard", "--dry-run", "--status", "dead")

    assert (plan["dry_run"], plan["action"], plan["count"], plan["skipped"]) == (
        True,
        "replay",
        3,
        0,
    )
    assert (plan["key_count"], plan["keys"]) == (1, [{"key": "order-1", "count": 3}])
    assert plan["queues"] == [{"topic": "orders", "queue": 1, "count": 3}]
    assert "under after_dlq = continue" in plan["order_notes"][0]
    assert (discard_plan["action"], discard_plan["count"]) == ("discard", 6)
    assert dead_letters_in_redis(redis_client) == 6
    assert set(DeadLetter.objects.values_list("status", flat=True)) == {Status.DEAD}
    assert ActionRequest.objects.count() == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("replay", "--ids", "999999"), "no dead letter 999999 in group 'billing'"),
        (("replay", "--ids", "x1"), "ids must be whole numbers"),
        (("replay", "--key", "nobody"), "nothing to replay: no dead letter matches"),
        (("replay", "--status", "replayed"), "nothing to replay"),
        (("replay", "--status", "later"), "unknown status"),
        (("discard", "--key", "order-0"), "a discard needs a reason"),
        (("replay", "--request-id", "bad id!"), "request_id must be"),
    ],
)
def test_it_refuses_bad_input_clearly_and_does_nothing(
    redis_client: redis.Redis, args: tuple[str, ...], message: str
) -> None:
    fill(redis_client, keys_count=2, per_key=1)

    with pytest.raises(CommandError) as refused:
        call_command("dlq", *args, "--group", GROUP, stdout=StringIO(), stderr=StringIO())

    assert message in str(refused.value)
    assert dead_letters_in_redis(redis_client) == 2
    assert replayed_messages(redis_client) == []
    assert ActionRequest.objects.count() == 0


def test_it_refuses_an_unknown_group(redis_client: redis.Redis) -> None:
    fill(redis_client, keys_count=1, per_key=1)

    with pytest.raises(CommandError) as refused:
        call_command("dlq", "replay", "--group", "nobody", stdout=StringIO(), stderr=StringIO())

    assert "no consumer group 'nobody'" in str(refused.value)
    assert dead_letters_in_redis(redis_client) == 1
