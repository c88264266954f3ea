"""Statuses the sync learns from the runtime: a replay that died again marks its original
``dead_again``; ``dead_letter_replayed``, ``dead_letter_discarded`` and
``replay_succeeded`` events (stored by the ingester) move their record forward, once."""

from __future__ import annotations

import pytest
import redis

from lockstep.dashboard.deadletters.models import DeadLetter, Status
from lockstep.dashboard.deadletters.sync import sync_all
from lockstep.workers import events as ev
from lockstep.workers.message import ORIGINAL_OFFSET_HEADER, REPLAY_ID_HEADER, REPLAY_OF_HEADER
from tests.dashboard.deadletters.helpers import T0_MS, add_dead_letter, make_group
from tests.dashboard.scenarios import ingest_all, write_event

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]


def _history(record: DeadLetter) -> list[tuple[str, str, str]]:
    return [(h.status, h.actor, h.request_id) for h in record.history.order_by("at", "id")]


def _report(client: redis.Redis, type_: str, dlq_id: str, queue: int = 0, **details: object):
    write_event(
        client,
        type_,
        T0_MS + 60_000,
        topic="orders",
        group="billing",
        queue=queue,
        key="order-1",
        details={"dlq_id": dlq_id, **details},
    )
    ingest_all(client)


def test_it_marks_a_dead_letter_dead_again_when_its_replay_is_dead_lettered(
    redis_client: redis.Redis,
) -> None:
    make_group(redis_client)
    first = add_dead_letter(redis_client, offset=5)
    sync_all(redis_client)
    again = add_dead_letter(
        redis_client,
        offset=40,
        headers={REPLAY_OF_HEADER: first, REPLAY_ID_HEADER: "req-1", ORIGINAL_OFFSET_HEADER: 5},
        dead_at_ms=T0_MS + 90_000,
    )

    result = sync_all(redis_client)

    original = DeadLetter.objects.get(dlq_id=first)
    replay = DeadLetter.objects.get(dlq_id=again)
    assert result.dead_again == 1
    assert original.status == Status.DEAD_AGAIN
    assert _history(original) == [("dead", "", ""), ("dead_again", "", "req-1")]
    assert (replay.status, replay.replay_of) == (Status.DEAD, first)


def test_it_marks_dead_again_even_when_both_arrive_in_one_read(
    redis_client: redis.Redis,
) -> None:
    make_group(redis_client)
    first = add_dead_letter(redis_client, offset=5)
    add_dead_letter(redis_client, offset=40, headers={REPLAY_OF_HEADER: first})

    sync_all(redis_client)
    sync_all(redis_client)

    original = DeadLetter.objects.get(dlq_id=first)
    assert original.status == Status.DEAD_AGAIN
    assert original.history.filter(status=Status.DEAD_AGAIN).count() == 1


def test_it_ignores_a_replay_of_a_dead_letter_it_never_saw(redis_client: redis.Redis) -> None:
    make_group(redis_client)
    again = add_dead_letter(redis_client, headers={REPLAY_OF_HEADER: "1-0"})

    sync_all(redis_client)

    assert DeadLetter.objects.get(dlq_id=again).status == Status.DEAD
    assert DeadLetter.objects.count() == 1


def test_it_follows_a_replay_to_its_success_from_the_runtime_events(
    redis_client: redis.Redis,
) -> None:
    make_group(redis_client)
    dlq_id = add_dead_letter(redis_client, offset=5)
    sync_all(redis_client)

    _report(
        redis_client,
        ev.DEAD_LETTER_REPLAYED,
        dlq_id,
        actor="operator",
        replay_id="req-7",
        outcome="republished",
        new_offset=90,
    )
    sync_all(redis_client)
    replayed = DeadLetter.objects.get(dlq_id=dlq_id).status
    _report(
        redis_client,
        ev.REPLAY_SUCCEEDED,
        dlq_id,
        replay_id="req-7",
        original_offset=5,
        offset=90,
    )
    sync_all(redis_client)

    record = DeadLetter.objects.get(dlq_id=dlq_id)
    assert replayed == Status.REPLAYED
    assert record.status == Status.SUCCEEDED
    assert _history(record) == [
        ("dead", "", ""),
        ("replayed", "operator", "req-7"),
        ("succeeded", "", "req-7"),
    ]
    assert record.history.get(status=Status.REPLAYED).note == "replayed (republished at offset 90)"


def test_it_records_a_discard_with_its_reason(redis_client: redis.Redis) -> None:
    make_group(redis_client)
    dlq_id = add_dead_letter(redis_client)
    sync_all(redis_client)

    _report(redis_client, ev.DEAD_LETTER_DISCARDED, dlq_id, actor="ops", reason="duplicate")
    sync_all(redis_client)

    record = DeadLetter.objects.get(dlq_id=dlq_id)
    assert record.status == Status.DISCARDED
    assert record.history.get(status=Status.DISCARDED).note == "discarded: duplicate"


def test_it_never_moves_a_record_backwards_or_twice(redis_client: redis.Redis) -> None:
    make_group(redis_client)
    dlq_id = add_dead_letter(redis_client)
    sync_all(redis_client)
    _report(redis_client, ev.REPLAY_SUCCEEDED, dlq_id, replay_id="r", offset=3)
    sync_all(redis_client)

    _report(redis_client, ev.REPLAY_SUCCEEDED, dlq_id, replay_id="r", offset=3)
    _report(redis_client, ev.DEAD_LETTER_DISCARDED, dlq_id, actor="late")
    sync_all(redis_client)

    record = DeadLetter.objects.get(dlq_id=dlq_id)
    assert record.status == Status.SUCCEEDED
    assert _history(record) == [("dead", "", ""), ("succeeded", "", "r")]


def test_it_matches_reports_to_the_dead_letter_of_their_own_queue(
    redis_client: redis.Redis,
) -> None:
    make_group(redis_client)
    dlq_id = add_dead_letter(redis_client, queue=1)
    sync_all(redis_client)

    _report(redis_client, ev.DEAD_LETTER_DISCARDED, dlq_id, queue=2)
    sync_all(redis_client)

    assert DeadLetter.objects.get(dlq_id=dlq_id).status == Status.DEAD
