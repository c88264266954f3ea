"""Upgrading a deployment from one event stream to ``LOCKSTEP_EVENT_SHARDS=4``: the
ingester keeps reading ``ls:events`` from its existing cursor (the ``events`` row, as
before sharding) until old writers are gone, and reads the new shards beside it; every
event is stored once, the legacy ones under the IDs they always had."""

from __future__ import annotations

import pytest
import redis

from lockstep.dashboard.monitor.ingest import Ingester
from lockstep.dashboard.web.store.models import Event, IngestCursor
from lockstep.workers import events as ev
from lockstep.workers import keys
from lockstep.workers.events import shard_streams
from lockstep.workers.redis_types import entries

pytestmark = [pytest.mark.django_db, pytest.mark.on_postgres]


def _write(client: redis.Redis, rounds: range, shards: int | None = None) -> None:
    batch = [
        ev.Event(ev.LOCK_ACQUIRED, 1_700_000_000_000 + n, "orders", "g", n % 8, token=n)
        for n in rounds
    ]
    ev.append(client, batch, shards=shards)


def _drain(ingester: Ingester) -> None:
    while ingester.run_once(block_ms=0):
        pass


def test_the_legacy_stream_and_its_cursor_carry_on_beside_the_shards(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOCKSTEP_EVENT_SHARDS", raising=False)
    _write(redis_client, range(0, 20))
    _drain(Ingester(redis_client))
    legacy_cursor = IngestCursor.objects.get(name="events")

    _write(redis_client, range(20, 25))  # a writer not yet restarted with the new setting
    monkeypatch.setenv("LOCKSTEP_EVENT_SHARDS", "4")
    _write(redis_client, range(25, 60))  # writers restarted with it
    _drain(Ingester(redis_client))  # the ingester restarted with it too

    legacy_ids = [i.decode() for i, _ in entries(redis_client.xrange(keys.EVENTS))]
    assert len(legacy_ids) == 25
    stored = list(Event.objects.values_list("stream_id", flat=True))
    assert len(stored) == len(set(stored)) == 60
    assert set(legacy_ids) <= set(stored), "legacy events keep their plain IDs"
    assert sorted(t or 0 for t in Event.objects.values_list("token", flat=True)) == list(range(60))
    cursor = IngestCursor.objects.get(name="events")
    assert cursor.pk == legacy_cursor.pk and cursor.last_id == legacy_ids[-1]
    assert set(IngestCursor.objects.values_list("name", flat=True)) >= {
        "events",
        *(s for s in shard_streams(4) if redis_client.exists(s)),
    }
