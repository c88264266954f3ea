"""Two overlapping calls (a slow run and the next beat tick) never write at once: the
second finds the writer's lock taken and writes nothing; the next call after goes on."""

from __future__ import annotations

import pytest
import redis

from lockstep.dashboard.reports.models import DataCursor
from lockstep.dashboard.reports.writer import LOCK_KEY, write_new_data
from lockstep.workers import events as ev
from tests.dashboard.reports.writing import analytics_uri, files, ms_of, store

__all__ = ["analytics_uri"]

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]


def test_it_writes_nothing_while_another_call_holds_the_lock(
    analytics_uri: str, redis_client: redis.Redis
) -> None:
    store(ev.LOCK_ACQUIRED, ms_of("2024-03-10T12:00:00"), topic="orders", group="g", queue=0)
    running = redis_client.lock(LOCK_KEY, timeout=60)
    assert running.acquire(blocking=False)

    assert write_new_data() == {"messages": 0, "events": 0, "samples": 0}
    assert files(analytics_uri, "events") == []
    assert not DataCursor.objects.exists()

    running.release()
    assert write_new_data()["events"] == 1
