"""A "Run now" whose task cannot reach Celery's broker fails at once, and a queued run no
worker took within the expiry is failed by the next request: neither blocks its day."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any

import pytest
from django.utils import timezone

from lockstep.dashboard.celery import app as celery_app
from lockstep.dashboard.reports import runner
from lockstep.dashboard.reports.models import AnalyticsRun
from tests.dashboard.helpers import point_celery_at
from tests.support import refused_port

pytestmark = pytest.mark.django_db

DAY = date(2026, 11, 20)


@pytest.fixture
def dead_broker() -> Iterator[None]:
    before = celery_app.conf.broker_url
    with refused_port() as port:
        point_celery_at(f"redis://127.0.0.1:{port}/0")
        try:
            yield
        finally:
            point_celery_at(before)


def test_a_run_whose_task_cannot_reach_the_broker_fails_and_frees_its_day(
    dead_broker: None, django_capture_on_commit_callbacks: Any
):
    with django_capture_on_commit_callbacks(execute=True):
        run = runner.request_run(DAY, "olga")
    run.refresh_from_db()
    assert run.status == AnalyticsRun.Status.FAILED
    assert "broker" in run.error

    with django_capture_on_commit_callbacks(execute=False):
        again = runner.request_run(DAY, "olga")  # not refused as "already active"
    assert again.pk != run.pk


def test_a_queued_run_no_worker_took_is_failed_by_the_next_request(
    django_capture_on_commit_callbacks: Any,
):
    stale = AnalyticsRun.objects.create(
        day=DAY,
        status=AnalyticsRun.Status.QUEUED,
        started_at=timezone.now() - runner.QUEUED_RUN_EXPIRY - timedelta(minutes=1),
        spark_master="local[1]",
    )
    fresh = AnalyticsRun.objects.create(
        day=DAY + timedelta(days=1), status=AnalyticsRun.Status.QUEUED, spark_master="local[1]"
    )
    with django_capture_on_commit_callbacks(execute=False):
        run = runner.request_run(DAY, "olga")
    stale.refresh_from_db()
    assert stale.status == AnalyticsRun.Status.FAILED
    assert "worker" in stale.error
    assert run.status == AnalyticsRun.Status.QUEUED

    with pytest.raises(runner.RunAlreadyActive) as refused:
        runner.request_run(fresh.day, "olga")  # a recent queued run still counts
    assert refused.value.run.pk == fresh.pk
