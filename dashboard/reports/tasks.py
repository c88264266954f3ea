"""Scheduled work (Celery beat): appending to the analytics data set, and the analytics
runs (nightly, or asked for on the reports page)."""

from __future__ import annotations

import logging

from celery import shared_task

from lockstep.dashboard.reports import runner, writer
from lockstep.dashboard.reports.models import AnalyticsRun
from lockstep.dashboard.web.redis_conn import skipped_during_redis_outage

log = logging.getLogger(__name__)


@shared_task
@skipped_during_redis_outage
def write_analytics_data() -> dict[str, int]:
    """Append what is new (events, samples, messages) to the data set; the rows written
    per data set."""
    return writer.write_new_data()


@shared_task
def run_nightly_analytics() -> dict[str, object]:
    """Beat, at ``LOCKSTEP_ANALYTICS_NIGHTLY_AT``: analyse yesterday (UTC)."""
    run = runner.run_analytics(trigger=AnalyticsRun.Trigger.NIGHTLY)
    _log(run)
    return run.as_dict()


@shared_task
def run_requested_analytics(run_id: int) -> dict[str, object]:
    """A run queued by ``runner.request_run`` (the reports page's "Run now")."""
    run = runner.run_queued(run_id)
    _log(run)
    return run.as_dict()


def _log(run: AnalyticsRun) -> None:
    level = logging.ERROR if run.status == AnalyticsRun.Status.FAILED else logging.INFO
    log.log(level, "analytics run %s of %s: %s %s", run.pk, run.day, run.status, run.error)
