"""Nightly analytics runs (with their queue figures and stuck episodes) older than
LOCKSTEP_REPORT_RETENTION_DAYS are pruned, except the latest report, which the reports
page shows however old it is."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from lockstep.dashboard.monitor.tasks import prune_events
from lockstep.dashboard.reports.models import AnalyticsRun, QueueDay, StuckEpisode

pytestmark = pytest.mark.django_db


def _run(age_days: float, status: str = AnalyticsRun.Status.OK) -> AnalyticsRun:
    started = timezone.now() - timedelta(days=age_days)
    run = AnalyticsRun.objects.create(
        day=(started - timedelta(days=1)).date(),
        started_at=started,
        finished_at=started + timedelta(minutes=2),
        status=status,
        spark_master="local[1]",
    )
    QueueDay.objects.create(run=run, topic="orders", group="mailer", queue=0)
    at: datetime = started
    StuckEpisode.objects.create(
        run=run,
        topic="orders",
        group="mailer",
        queue=0,
        level=StuckEpisode.Level.QUEUE,
        offset=9,
        started_at=at,
        ended_at=at,
        last_seen_at=at,
        duration_s=60.0,
        outcome="succeeded",
    )
    return run


def test_it_deletes_runs_older_than_the_retention_with_their_rows(settings: Any) -> None:
    settings.LOCKSTEP_REPORT_RETENTION_DAYS = 30
    old = [_run(45), _run(31, AnalyticsRun.Status.FAILED)]
    kept = [_run(29), _run(1, AnalyticsRun.Status.FAILED)]

    deleted = prune_events()

    assert deleted == len(old)
    assert sorted(AnalyticsRun.objects.values_list("pk", flat=True)) == [r.pk for r in kept]
    assert sorted(QueueDay.objects.values_list("run_id", flat=True)) == [r.pk for r in kept]
    assert sorted(StuckEpisode.objects.values_list("run_id", flat=True)) == [r.pk for r in kept]


def test_it_keeps_the_latest_report_however_old_it_is(settings: Any) -> None:
    settings.LOCKSTEP_REPORT_RETENTION_DAYS = 30
    _run(60)
    latest = _run(40, AnalyticsRun.Status.EMPTY)
    failed_since = _run(35, AnalyticsRun.Status.FAILED)

    prune_events()

    assert list(AnalyticsRun.objects.values_list("pk", flat=True)) == [latest.pk]
    assert AnalyticsRun.objects.latest_report() == latest
    assert not AnalyticsRun.objects.filter(pk=failed_since.pk).exists()
