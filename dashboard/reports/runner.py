"""One analytics run of one UTC day (docs/analytics.md §5), shared by
``manage.py run_analytics``, the nightly beat task and the reports page's "Run now": run
the Spark job over the data set, store the results, replace the day's earlier ones."""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, timedelta
from types import ModuleType
from typing import TYPE_CHECKING, Any

import redis
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError

from lockstep.dashboard.reports import models as m
from lockstep.dashboard.reports.models import AnalyticsRun

if TYPE_CHECKING:
    from lockstep.analytics.job import JobResult

log = logging.getLogger(__name__)

# A Py4J error carries the whole Java stack trace; its first lines name the cause.
ERROR_LINES = 6
ERROR_CHARS = 2000
ACTIVE = (AnalyticsRun.Status.QUEUED, AnalyticsRun.Status.RUNNING)
# A queued run no worker took for this long is taken for lost (no worker running, or its
# task was dropped); a new request of that day then fails it instead of waiting for it.
QUEUED_RUN_EXPIRY = timedelta(minutes=30)


class RunAlreadyActive(Exception):
    """A run of that day is queued or running; ``run`` is it."""

    def __init__(self, run: AnalyticsRun) -> None:
        super().__init__(f"analytics run {run.pk} of {run.day} is already {run.status}")
        self.run = run


def yesterday(now: datetime | None = None) -> date:
    return (now or timezone.now()).astimezone(UTC).date() - timedelta(days=1)


def run_analytics(
    *,
    day: date | None = None,
    master: str | None = None,
    trigger: str = AnalyticsRun.Trigger.COMMAND,
    requested_by: str = "",
) -> AnalyticsRun:
    """Analyse ``day`` (default yesterday, UTC) on ``master`` (default
    ``settings.SPARK_MASTER``; an already active SparkSession is reused). Always returns
    the recorded run instead of raising: ``ok`` with its rows, ``empty`` when the day has
    no data, or ``failed`` with ``error`` saying why."""
    run = AnalyticsRun.objects.create(
        day=day or yesterday(),
        trigger=trigger,
        requested_by=requested_by,
        spark_master=master or settings.SPARK_MASTER,
        data_uri=settings.LOCKSTEP_ANALYTICS_URI,
    )
    return _execute(run)


def request_run(day: date, requested_by: str) -> AnalyticsRun:
    """Queue a run of ``day`` for a Celery worker (the reports page); raises
    ``RunAlreadyActive`` when one of that day is queued or running already. A queued run
    that no worker took within ``QUEUED_RUN_EXPIRY`` is failed first, and so is the new
    run when its task cannot be handed to the broker: neither blocks the day for ever."""
    with transaction.atomic():
        _expire_abandoned(day)
        active = AnalyticsRun.objects.select_for_update().filter(day=day, status__in=ACTIVE)
        if (found := active.first()) is not None:
            raise RunAlreadyActive(found)
        run = AnalyticsRun.objects.create(
            day=day,
            trigger=AnalyticsRun.Trigger.PAGE,
            requested_by=requested_by,
            spark_master=settings.SPARK_MASTER,
            data_uri=settings.LOCKSTEP_ANALYTICS_URI,
        )
    transaction.on_commit(lambda: _hand_to_worker(run))
    return run


def _expire_abandoned(day: date) -> None:
    cutoff = timezone.now() - QUEUED_RUN_EXPIRY
    AnalyticsRun.objects.filter(
        day=day, status=AnalyticsRun.Status.QUEUED, started_at__lt=cutoff
    ).update(
        status=AnalyticsRun.Status.FAILED,
        finished_at=timezone.now(),
        error="no Celery worker took this run: is a worker running?",
    )


def _hand_to_worker(run: AnalyticsRun) -> None:
    from lockstep.dashboard.reports.tasks import run_requested_analytics

    try:
        run_requested_analytics.delay(run.pk)
    except (OperationalError, redis.RedisError, OSError) as exc:
        log.warning("analytics run %s could not be queued: %s", run.pk, exc)
        run.finish(
            AnalyticsRun.Status.FAILED,
            error=f"the task could not be handed to Celery's broker: {describe_error(exc)}",
        )


def run_queued(run_id: int) -> AnalyticsRun:
    """Carry out a run made by ``request_run`` (a run no longer queued is left alone)."""
    run = AnalyticsRun.objects.get(pk=run_id)
    if run.status != AnalyticsRun.Status.QUEUED:
        return run
    return _execute(run)


def _execute(run: AnalyticsRun) -> AnalyticsRun:
    run.status = AnalyticsRun.Status.RUNNING
    run.started_at = timezone.now()
    run.save(update_fields=["status", "started_at"])
    try:
        _analyse(run)
    except AnalyticsNotInstalled as exc:  # expected where the extra is left out: no traceback
        log.error("analytics run %s failed: %s", run.pk, exc)
        run.finish(AnalyticsRun.Status.FAILED, error=describe_error(exc))
    except Exception as exc:  # any failure is recorded on the run and shown to operators
        log.exception("analytics run %s failed", run.pk)
        run.finish(AnalyticsRun.Status.FAILED, error=describe_error(exc))
    return run


def _progress(run: AnalyticsRun) -> Any:
    def tell(stage: str, percent: int) -> None:
        run.stage, run.progress = stage, percent
        AnalyticsRun.objects.filter(pk=run.pk).update(stage=stage, progress=percent)

    return tell


class AnalyticsNotInstalled(Exception):
    """The Spark job cannot run here: the ``[analytics]`` extra is not installed."""


def _analyse(run: AnalyticsRun) -> None:
    tell = _progress(run)
    tell("starting spark", 1)
    run.spark_master, result = _spark_side().analyse(run.spark_master, run.data_uri, run.day, tell)
    tell("store", 95)
    _store(run, result)


def _spark_side() -> ModuleType:
    """The Spark side, imported when a run starts rather than with the dashboard: the
    ``[analytics]`` extra is optional (docs/packaging.md), and without it a run fails
    saying what to install."""
    try:
        from lockstep.dashboard.reports import spark
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] not in ("pyspark", "py4j"):
            raise
        raise AnalyticsNotInstalled(
            "the Spark job needs the [analytics] extra: "
            "pip install 'lockstep[dashboard,analytics]' (and a Java 17 runtime)"
        ) from None
    return spark


# Result list of JobResult -> the model its rows are stored as.
_TABLES: tuple[tuple[str, type[Any]], ...] = (
    ("hourly_queue", m.HourlyQueue),
    ("hourly_group", m.HourlyGroup),
    ("queue_day", m.QueueDay),
    ("group_day", m.GroupDay),
    ("stuck_episodes", m.StuckEpisode),
    ("retry_hotspots", m.RetryHotspot),
    ("key_skew", m.KeySkew),
)


@transaction.atomic
def _store(run: AnalyticsRun, result: JobResult) -> None:
    for attribute, model in _TABLES:
        model.objects.bulk_create(
            (model(run=run, **row) for row in getattr(result, attribute)), batch_size=1000
        )
    run.messages_read = result.messages_read
    run.events_read = result.events_read
    run.samples_read = result.samples_read
    run.stage, run.progress = "done", 100
    run.finish(AnalyticsRun.Status.EMPTY if result.empty else AnalyticsRun.Status.OK)
    # The day's earlier reports are replaced by this one (their rows go with them).
    AnalyticsRun.objects.reports().filter(day=run.day).exclude(pk=run.pk).delete()


def describe_error(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()][:ERROR_LINES]
    return f"{type(exc).__name__}: {' '.join(lines)}"[:ERROR_CHARS]
