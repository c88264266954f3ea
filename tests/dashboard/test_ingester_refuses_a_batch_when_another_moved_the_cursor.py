"""The cursor is moved by compare-and-set in the batch's transaction: an ingester whose
lease lapsed while it was paused, and which then stores a batch another ingester stored
meanwhile, is refused (``CursorMoved``) before it stores or counts anything, and goes on
from the cursor in the database."""

from __future__ import annotations

import pytest
import redis

from lockstep.dashboard.monitor.ingest import (
    Cursor,
    CursorMoved,
    Ingester,
    load_cursor,
    store_batch,
)
from lockstep.dashboard.web.store.models import Event, EventCounter
from lockstep.workers import events as ev
from lockstep.workers import keys
from lockstep.workers.redis_types import entries

pytestmark = [pytest.mark.django_db, pytest.mark.on_postgres]


def _write(client: redis.Redis, count: int) -> None:
    batch = [
        ev.Event(ev.LOCK_ACQUIRED, 1_700_000_000_000 + n, "orders", "g", 0, token=n)
        for n in range(count)
    ]
    ev.append(client, batch, shards=1)


def _owner_changes() -> int:
    return sum(
        EventCounter.objects.filter(name="lock_owner_changes").values_list("value", flat=True)
    )


def test_a_batch_read_after_a_cursor_that_moved_stores_and_counts_nothing(
    redis_client: redis.Redis,
) -> None:
    _write(redis_client, 10)
    read = entries(redis_client.xrange(keys.EVENTS))
    start = load_cursor()
    store_batch(read, start)  # the other ingester, first

    with pytest.raises(CursorMoved):
        store_batch(read, start)  # the late one, with the cursor it read before

    assert Event.objects.count() == 10
    assert _owner_changes() == 10
    assert load_cursor() == Cursor(read[-1][0].decode(), 10)


def test_the_late_ingester_goes_on_from_the_stored_cursor(redis_client: redis.Redis) -> None:
    _write(redis_client, 10)
    late, other = Ingester(redis_client), Ingester(redis_client)
    late.run_once(block_ms=0)  # reads its cursor, stores the first ten
    _write(redis_client, 5)
    other.run_once(block_ms=0)  # stores the next five meanwhile
    _write(redis_client, 5)

    late.run_once(block_ms=0)  # refused: the cursor moved; re-read from the database
    late.run_once(block_ms=0)

    assert Event.objects.count() == 20
    assert _owner_changes() == 20
    assert (late.stored, other.stored) == (15, 5)
