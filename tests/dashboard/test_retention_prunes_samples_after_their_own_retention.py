"""Samples (``lag_sampled``, ``key_state``, ``lanes``) are pruned after
LOCKSTEP_SAMPLE_RETENTION_DAYS, independently of the other events, which stay for
LOCKSTEP_EVENT_RETENTION_DAYS; the counters behind /metrics do not move."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

from lockstep.dashboard.monitor.ingest import Ingester
from lockstep.dashboard.monitor.tasks import prune_events
from lockstep.dashboard.web.store.models import Event, EventCounter
from lockstep.workers import events as ev
from lockstep.workers import keys
from lockstep.workers.redis_types import as_bytes

pytestmark = pytest.mark.django_db

DAY_MS = 86_400_000


def _append(client: redis.Redis, type_: str, age_days: float) -> str:
    fields: dict[Any, Any] = {
        "type": type_,
        "ts": int(time.time() * 1000 - age_days * DAY_MS),
        "topic": "orders",
        "group": "mailer",
        "queue": 0,
        "details": '{"offsets": [3]}',
    }
    return as_bytes(client.xadd(keys.EVENTS, fields)).decode()


def _ingest(client: redis.Redis) -> None:
    ingester = Ingester(client)
    while ingester.run_once(block_ms=0):
        pass


def test_it_deletes_samples_older_than_their_retention_and_keeps_other_events(
    redis_client: redis.Redis, settings: Any
) -> None:
    settings.LOCKSTEP_SAMPLE_RETENTION_DAYS = 2
    settings.LOCKSTEP_EVENT_RETENTION_DAYS = 7
    old_samples = [_append(redis_client, t, 2.5) for t in (ev.LAG_SAMPLED, ev.KEY_STATE, ev.LANES)]
    kept = [_append(redis_client, t, 1.5) for t in (ev.LAG_SAMPLED, ev.KEY_STATE, ev.LANES)]
    kept += [_append(redis_client, t, 2.5) for t in (ev.CONSUME_FAILED, ev.LOCK_ACQUIRED)]
    old_events = [_append(redis_client, ev.CONSUME_FAILED, 8)]
    _ingest(redis_client)
    counters = sorted(EventCounter.objects.values_list("name", "value"))

    deleted = prune_events()

    assert deleted == len(old_samples) + len(old_events)
    assert sorted(Event.objects.values_list("stream_id", flat=True)) == sorted(kept)
    assert sorted(EventCounter.objects.values_list("name", "value")) == counters
    assert counters == [("consume_retries", 2), ("lock_owner_changes", 1)]
