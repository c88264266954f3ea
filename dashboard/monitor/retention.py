"""Retention: the database keeps time-series rows for a bounded time, one setting per
kind, so its size follows the retention windows instead of growing forever.

Each ``prune_*`` deletes the rows of one kind older than its setting, measured from
``now``, and returns how many rows of that kind it deleted (rows removed with them by a
cascade are not counted). None of them touches ``EventCounter`` or the ingest cursor:
the ``/metrics`` counters never go down, and a pruned event is never stored again.

- events (every type but the periodic samples): ``LOCKSTEP_EVENT_RETENTION_DAYS``;
- samples (``lag_sampled``, ``key_state``, ``lanes``): ``LOCKSTEP_SAMPLE_RETENTION_DAYS``;
- analytics runs (with their lag summaries and stuck intervals):
  ``LOCKSTEP_REPORT_RETENTION_DAYS``, by start time; the latest report is always kept;
- resolved alerts (with their timeline and deliveries), by resolution time, and test
  deliveries (no alert), by creation time: ``LOCKSTEP_ALERT_RETENTION_DAYS``. Open and
  acknowledged alerts are kept whatever their age.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings

from lockstep.dashboard.alerts.models import RESOLVED, Alert, Delivery
from lockstep.dashboard.monitor.models import Event
from lockstep.dashboard.monitor.queries import NOISY_TYPES
from lockstep.dashboard.reports.models import AnalyticsRun

log = logging.getLogger(__name__)

# The periodic event types: samples of a state, many per minute per queue, read only over
# recent windows (charts of at most a day, lag_trend, stuck detection, the nightly job).
SAMPLE_TYPES = NOISY_TYPES


def _cutoff(now: datetime, days: int) -> datetime:
    return now - timedelta(days=days)


def prune_events(now: datetime) -> int:
    cutoff = _cutoff(now, settings.LOCKSTEP_EVENT_RETENTION_DAYS)
    deleted, _ = Event.objects.filter(ts__lt=cutoff).exclude(type__in=SAMPLE_TYPES).delete()
    return deleted


def prune_samples(now: datetime) -> int:
    cutoff = _cutoff(now, settings.LOCKSTEP_SAMPLE_RETENTION_DAYS)
    deleted, _ = Event.objects.filter(ts__lt=cutoff, type__in=SAMPLE_TYPES).delete()
    return deleted


def prune_analytics_runs(now: datetime) -> int:
    cutoff = _cutoff(now, settings.LOCKSTEP_REPORT_RETENTION_DAYS)
    old = AnalyticsRun.objects.filter(started_at__lt=cutoff)
    latest = AnalyticsRun.objects.latest_report()
    if latest is not None:  # the reports page always has something to show
        old = old.exclude(pk=latest.pk)
    _, per_model = old.delete()
    return per_model.get(AnalyticsRun._meta.label, 0)


def prune_alerts(now: datetime) -> int:
    cutoff = _cutoff(now, settings.LOCKSTEP_ALERT_RETENTION_DAYS)
    _, per_model = Alert.objects.filter(state=RESOLVED, resolved_at__lt=cutoff).delete()
    return per_model.get(Alert._meta.label, 0)


def prune_test_deliveries(now: datetime) -> int:
    cutoff = _cutoff(now, settings.LOCKSTEP_ALERT_RETENTION_DAYS)
    deleted, _ = Delivery.objects.filter(alert__isnull=True, created_at__lt=cutoff).delete()
    return deleted


PRUNERS = {
    "events": prune_events,
    "samples": prune_samples,
    "analytics_runs": prune_analytics_runs,
    "alerts": prune_alerts,
    "test_deliveries": prune_test_deliveries,
}


def prune_all(now: datetime) -> dict[str, int]:
    """Every kind pruned in turn; how many rows of each were deleted."""
    deleted = {kind: prune(now) for kind, prune in PRUNERS.items()}
    if any(deleted.values()):
        log.info("retention pruned %s", ", ".join(f"{n} {k}" for k, n in deleted.items()))
    return deleted
