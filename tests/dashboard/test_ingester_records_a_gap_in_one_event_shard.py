"""Each event shard is bounded on its own (``LOCKSTEP_EVENTS_MAXLEN``); when one was
trimmed past the ingester's cursor, the ``events_lost`` event it records names that
shard and counts only that shard's lost events, and the other shards lose nothing."""

from __future__ import annotations

import pytest
import redis

from lockstep.dashboard.monitor.ingest import EVENTS_LOST, Ingester
from lockstep.dashboard.web.store.models import Event
from lockstep.workers import events as ev
from lockstep.workers import keys
from lockstep.workers.redis_types import entries

pytestmark = [pytest.mark.django_db, pytest.mark.on_postgres]


def _write(client: redis.Redis, rounds: range) -> None:
    ev.append(
        client,
        [
            ev.Event(ev.LOCK_ACQUIRED, 1_700_000_000_000 + n, "orders", "g", q, token=n)
            for n in rounds
            for q in range(8)
        ],
        shards=4,
    )


def _drain(ingester: Ingester) -> None:
    while ingester.run_once(block_ms=0):
        pass


def test_the_gap_is_recorded_for_the_trimmed_shard_only(redis_client: redis.Redis) -> None:
    ingester = Ingester(redis_client, shards=4)
    trimmed = ev.stream_of(ev.Event(ev.LOCK_ACQUIRED, 0, "orders", "g", 3), 4)
    _write(redis_client, range(0, 5))
    _drain(ingester)
    stored_before = redis_client.xlen(trimmed)
    _write(redis_client, range(5, 55))
    written_after = redis_client.xlen(trimmed) - stored_before
    redis_client.xtrim(trimmed, maxlen=10, approximate=False)
    first_left = entries(redis_client.xrange(trimmed, count=1))[0][0].decode()

    _drain(ingester)

    (lost,) = Event.objects.filter(type=EVENTS_LOST)
    shard = trimmed.removeprefix(f"{keys.PREFIX}:events:{{").removesuffix("}")
    assert lost.stream_id == f"lost:{shard}:{first_left}"
    assert lost.details["stream"] == trimmed
    assert lost.details["lost"] == written_after - 10
    stored = Event.objects.exclude(type=EVENTS_LOST).count()
    assert stored == 55 * 8 - (written_after - 10), "the other shards lost nothing"
