"""The sync copies every dead letter of every (queue, group) stream into one record, after
a cursor per stream: run twice, stored once; bounded per call; fields as the runtime wrote
them."""

from __future__ import annotations

import pytest
import redis
from django.conf import settings

from lockstep.dashboard.deadletters import tasks
from lockstep.dashboard.deadletters.models import DeadLetter, Status, StatusChange, SyncCursor
from lockstep.dashboard.deadletters.sync import sync_all, sync_dead_letters
from lockstep.workers.config import AfterDlq, Ordering
from tests.dashboard.deadletters.helpers import T0_MS, add_dead_letter, attempt, make_group

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]


def test_it_stores_each_dead_letter_once_however_often_it_runs(
    redis_client: redis.Redis,
) -> None:
    make_group(redis_client)
    ids = [add_dead_letter(redis_client, queue=q % 4, offset=q, key=f"k{q}") for q in range(10)]

    first = sync_dead_letters(redis_client)
    second = sync_dead_letters(redis_client)

    assert (first.copied, first.more) == (10, False)
    assert second.copied == 0
    assert sorted(DeadLetter.objects.values_list("dlq_id", flat=True)) == sorted(ids)
    assert StatusChange.objects.filter(status=Status.DEAD).count() == 10


def test_it_copies_only_what_arrived_after_its_cursor(redis_client: redis.Redis) -> None:
    make_group(redis_client)
    add_dead_letter(redis_client, queue=1, offset=4)
    sync_dead_letters(redis_client)
    later = add_dead_letter(redis_client, queue=1, offset=9)

    result = sync_dead_letters(redis_client)

    assert result.copied == 1
    assert DeadLetter.objects.filter(queue=1).count() == 2
    assert SyncCursor.objects.get(name="dlq orders 1 billing").last_id == later


def test_it_stops_at_its_limit_and_says_there_is_more(redis_client: redis.Redis) -> None:
    make_group(redis_client)
    for i in range(25):
        add_dead_letter(redis_client, queue=i % 2, offset=i, key=f"k{i}")

    first = sync_dead_letters(redis_client, limit=10)
    second = sync_dead_letters(redis_client, limit=10)
    third = sync_dead_letters(redis_client, limit=10)

    assert [first.copied, second.copied, third.copied] == [10, 10, 5]
    assert [first.more, second.more, third.more] == [True, True, False]
    assert DeadLetter.objects.count() == 25


def test_it_keeps_every_field_the_runtime_wrote(redis_client: redis.Redis) -> None:
    make_group(redis_client)
    dlq_id = add_dead_letter(
        redis_client,
        queue=2,
        offset=812,
        key="order-77",
        body=b"\xff\x00binary",
        headers={"source": "checkout"},
        error="ValueError: bad amount",
        reconsume_times=3,
        attempts=[attempt("ValueError: bad amount", T0_MS - 100, "Traceback ...")],
        ordering=Ordering.KEY,
        after_dlq=AfterDlq.HOLD,
        dead_at_ms=T0_MS + 250,
    )

    sync_all(redis_client)

    record = DeadLetter.objects.get()
    assert (record.dlq_id, record.topic, record.group, record.queue, record.offset) == (
        dlq_id,
        "orders",
        "billing",
        2,
        812,
    )
    assert (record.key, record.error, record.reconsume_times) == (
        "order-77",
        "ValueError: bad amount",
        3,
    )
    assert bytes(record.body) == b"\xff\x00binary"
    assert record.body_size == 8
    assert record.headers == {"source": "checkout"}
    assert record.attempts == [
        {"at_ms": T0_MS - 100, "error": "ValueError: bad amount", "traceback": "Traceback ..."}
    ]
    assert (record.ordering, record.after_dlq, record.replay_of) == ("key", "hold", "")
    assert int(record.dead_at.timestamp() * 1000) == T0_MS + 250
    assert int(record.produced_at.timestamp() * 1000) == T0_MS + 250 - 5000
    assert record.status == Status.DEAD


def test_it_syncs_only_the_group_it_is_asked_for(redis_client: redis.Redis) -> None:
    make_group(redis_client, group="billing")
    make_group(redis_client, group="mailer")
    add_dead_letter(redis_client, group="billing")
    add_dead_letter(redis_client, group="mailer")

    sync_dead_letters(redis_client, group="mailer")

    assert list(DeadLetter.objects.values_list("group", flat=True)) == ["mailer"]


def test_it_runs_as_a_beat_task_every_few_seconds(redis_client: redis.Redis) -> None:
    make_group(redis_client)
    add_dead_letter(redis_client)

    copied = tasks.sync_dead_letters.apply().get()

    entry = settings.CELERY_BEAT_SCHEDULE["lockstep-sync-dead-letters"]
    assert entry["task"] == "lockstep.dashboard.deadletters.tasks.sync_dead_letters"
    assert entry["schedule"] == settings.LOCKSTEP_DEAD_LETTER_SYNC_SECONDS <= 5
    assert copied == 1
    assert DeadLetter.objects.count() == 1
