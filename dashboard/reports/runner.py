"""One analytics run, shared by ``manage.py run_analytics`` and the nightly Celery task:
export the window's events, run the Spark job on the export, store the results."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from analytics.job import JobResult, run_job
from analytics.session import spark_session
from dashboard.reports.export import export_events, export_path, prune_exports
from dashboard.reports.models import AnalyticsRun, LagSummary, StuckInterval

log = logging.getLogger(__name__)

APP_NAME = "lockstep-analytics"
DEFAULT_SINCE_HOURS = 24.0  # the nightly run covers the day since the previous one
# A Py4J error carries the whole Java stack trace; its first lines name the cause.
ERROR_LINES = 6
ERROR_CHARS = 2000


def run_analytics(
    *,
    master: str | None = None,
    since_hours: float = DEFAULT_SINCE_HOURS,
    now: datetime | None = None,
) -> AnalyticsRun:
    """Analyse the events of the last ``since_hours`` before ``now`` on ``master``
    (default ``settings.SPARK_MASTER``; an already active SparkSession is reused).

    Always returns the recorded run instead of raising: status ``ok`` with its rows,
    ``empty`` when the window holds no events (Spark is not started), or ``failed`` with
    ``error`` saying why. Malformed events do not fail a run; they are counted.
    """
    if since_hours <= 0:
        raise ValueError(f"since_hours must be positive, got {since_hours}")
    until = now or timezone.now()
    run = AnalyticsRun.objects.create(
        window_start=until - timedelta(hours=since_hours),
        window_end=until,
        spark_master=master or settings.SPARK_MASTER,
    )
    try:
        _analyse(run)
    except Exception as exc:  # any failure is recorded on the run and shown to operators
        log.exception("analytics run %s failed", run.pk)
        run.finish(AnalyticsRun.Status.FAILED, error=describe_error(exc))
    return run


def _analyse(run: AnalyticsRun) -> None:
    directory = Path(settings.LOCKSTEP_ANALYTICS_DIR)
    path = export_path(directory, run.pk, run.window_end)
    run.export_path = str(path)
    run.events_exported = export_events(path, run.window_start, run.window_end)
    if run.events_exported == 0:
        path.unlink(missing_ok=True)
        run.export_path = ""
        run.finish(AnalyticsRun.Status.EMPTY)
        return
    run.save(update_fields=["export_path", "events_exported"])
    with spark_session(run.spark_master, APP_NAME) as spark:
        run.spark_master = spark.sparkContext.master or run.spark_master
        result = run_job(spark, path)
    _store(run, result)
    prune_exports(directory)


@transaction.atomic
def _store(run: AnalyticsRun, result: JobResult) -> None:
    LagSummary.objects.bulk_create(LagSummary(run=run, **row) for row in result.lag_summary)
    StuckInterval.objects.bulk_create(
        StuckInterval(run=run, **row) for row in result.stuck_intervals
    )
    run.events_malformed = result.malformed
    run.malformed_examples = list(result.malformed_examples)
    run.finish(AnalyticsRun.Status.OK)


def describe_error(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()][:ERROR_LINES]
    return f"{type(exc).__name__}: {' '.join(lines)}"[:ERROR_CHARS]
