"""Retention: stored events older than LOCKSTEP_EVENT_RETENTION_DAYS are deleted by the
hourly beat task; newer ones stay, the counters behind /metrics do not move, and the
ingester does not store the pruned events again (they may still be in the stream)."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis
from django_celery_beat.models import PeriodicTask
from django_celery_beat.schedulers import DatabaseScheduler

from lockstep.dashboard.celery import app
from lockstep.dashboard.monitor.ingest import Ingester
from lockstep.dashboard.monitor.tasks import prune_events
from lockstep.dashboard.web.store.models import Event, EventCounter, IngestCursor
from lockstep.workers import keys
from lockstep.workers.redis_types import as_bytes

pytestmark = [pytest.mark.django_db, pytest.mark.on_postgres]

DAY_MS = 86_400_000


def _append(client: redis.Redis, age_days: float, count: int) -> list[str]:
    ts = int(time.time() * 1000 - age_days * DAY_MS)
    return [
        as_bytes(
            client.xadd(
                keys.EVENTS,
                {
                    "type": "lock_acquired",
                    "ts": ts,
                    "topic": "orders",
                    "group": "mailer",
                    "queue": 0,
                },
            )
        ).decode()
        for _ in range(count)
    ]


def _ingest(client: redis.Redis) -> None:
    ingester = Ingester(client)
    while ingester.run_once(block_ms=0):
        pass


def test_it_deletes_only_events_older_than_the_retention(
    redis_client: redis.Redis, settings: Any
) -> None:
    settings.LOCKSTEP_EVENT_RETENTION_DAYS = 3
    _append(redis_client, 5, 4)
    _append(redis_client, 3.01, 2)
    kept = _append(redis_client, 2.99, 3) + _append(redis_client, 0, 5)
    _ingest(redis_client)
    cursor = IngestCursor.objects.get().last_id

    deleted = prune_events()
    _ingest(redis_client)  # the pruned events are still in the stream

    assert deleted == 6
    assert sorted(Event.objects.values_list("stream_id", flat=True)) == sorted(kept)
    assert EventCounter.objects.get(name="lock_owner_changes").value == 14
    assert IngestCursor.objects.get().last_id == cursor


# Transactional: the scheduler closes the database connection as beat does at start,
# which on PostgreSQL ends the connection a test transaction would be running on.
@pytest.mark.django_db(transaction=True)
def test_it_runs_hourly_on_the_beat_schedule_as_a_registered_task() -> None:
    app.loader.import_default_modules()
    DatabaseScheduler(app=app)  # syncs CELERY_BEAT_SCHEDULE into the database, as beat does

    entry = PeriodicTask.objects.get(name="lockstep-prune-events")
    assert entry.task == "lockstep.dashboard.monitor.tasks.prune_events"
    assert entry.task in app.tasks
    assert entry.crontab is not None
    assert (entry.crontab.minute, entry.crontab.hour) == ("17", "*")
    assert entry.enabled
