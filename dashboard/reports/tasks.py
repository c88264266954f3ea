"""Scheduled work (Celery beat): the nightly analytics run."""

from __future__ import annotations

import logging

from celery import shared_task

from dashboard.reports import runner
from dashboard.reports.models import AnalyticsRun

log = logging.getLogger(__name__)


@shared_task
def run_analytics(since_hours: float = runner.DEFAULT_SINCE_HOURS) -> dict[str, object]:
    """The same run as ``manage.py run_analytics`` on ``settings.SPARK_MASTER``; the
    outcome is recorded on the run (shown at /analytics/), and logged."""
    run = runner.run_analytics(since_hours=since_hours)
    level = logging.ERROR if run.status == AnalyticsRun.Status.FAILED else logging.INFO
    log.log(
        level,
        "analytics run %s: %s, %d events, %d malformed %s",
        run.pk,
        run.status,
        run.events_exported,
        run.events_malformed,
        run.error,
    )
    return run.as_dict()
