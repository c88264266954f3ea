"""The reports' retention (``web.retention`` prunes every app's kinds): analytics runs,
with their lag summaries and stuck intervals, older than
``LOCKSTEP_REPORT_RETENTION_DAYS`` by start time; the latest report is always kept."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from lockstep.dashboard.reports.models import AnalyticsRun


def prune_analytics_runs(now: datetime) -> int:
    cutoff = now - timedelta(days=settings.LOCKSTEP_REPORT_RETENTION_DAYS)
    old = AnalyticsRun.objects.filter(started_at__lt=cutoff)
    latest = AnalyticsRun.objects.latest_report()
    if latest is not None:  # the reports page always has something to show
        old = old.exclude(pk=latest.pk)
    _, per_model = old.delete()
    return per_model.get(AnalyticsRun._meta.label, 0)
