"""A dead letter replayed or discarded in Redis whose event never reached the database (a
trimmed event stream, a gap) no longer shows as waiting: the sync and its detail view
read Redis and mark it gone; an event that arrives late still says what happened."""

from __future__ import annotations

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.deadletters.models import DeadLetter, Status
from lockstep.dashboard.deadletters.sync import sync_all
from lockstep.workers import events as ev
from lockstep.workers import keys
from lockstep.workers.dead_letters import discard
from lockstep.workers.refs import QueueRef
from tests.dashboard.deadletters.helpers import T0_MS, add_dead_letter, make_group, synced
from tests.dashboard.scenarios import ingest_all, write_event

pytestmark = pytest.mark.django_db

REF = QueueRef("orders", 0)


def _discard_losing_the_event(client: redis.Redis, dlq_id: str) -> None:
    """Discard in Redis, then lose the event that tells the database (trimmed away)."""
    assert discard(client, REF, "billing", dlq_id, actor="cli", reason="test")
    for key in client.scan_iter(match="ls:*events*"):
        if client.type(key) == b"stream":
            client.xtrim(key, maxlen=0)


def test_the_sync_marks_a_dead_letter_gone_from_redis_and_a_late_event_still_counts(
    redis_client: redis.Redis,
) -> None:
    make_group(redis_client)
    gone = synced(redis_client, add_dead_letter(redis_client, offset=1, key="order-1"))
    waiting = synced(redis_client, add_dead_letter(redis_client, offset=2, key="order-2"))
    _discard_losing_the_event(redis_client, gone.dlq_id)

    sync_all(redis_client)

    gone.refresh_from_db()
    waiting.refresh_from_db()
    assert gone.status == Status.GONE
    assert waiting.status == Status.DEAD
    last = gone.history.order_by("at", "id").last()
    assert last is not None and "event saying why was lost" in last.note
    write_event(
        redis_client,
        ev.DEAD_LETTER_DISCARDED,
        T0_MS + 60_000,
        topic="orders",
        group="billing",
        queue=0,
        key="order-1",
        details={"dlq_id": gone.dlq_id, "reason": "late"},
    )
    ingest_all(redis_client)
    sync_all(redis_client)
    gone.refresh_from_db()
    assert gone.status == Status.DISCARDED


def test_the_detail_view_reads_redis_at_once(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    record = synced(redis_client, add_dead_letter(redis_client))
    _discard_losing_the_event(redis_client, record.dlq_id)
    assert redis_client.xlen(keys.dead_letters(REF, "billing")) == 0
    client.force_login(viewer)

    answer = client.get(f"/api/v1/groups/billing/dead-letters/{record.pk}").json()
    page = client.get(f"/groups/billing/dead-letters/{record.pk}").content.decode()

    assert answer["status"] == "gone"
    assert DeadLetter.objects.get(pk=record.pk).status == Status.GONE
    assert 'id="dl-status" data-status="gone"' in page
