"""The alerts' retention (``web.retention`` prunes every app's kinds), both after
``LOCKSTEP_ALERT_RETENTION_DAYS``: resolved alerts (with their timeline and deliveries)
by resolution time, and test deliveries (no alert) by creation time. Open and
acknowledged alerts are kept whatever their age."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from lockstep.dashboard.alerts.models import RESOLVED, Alert, Delivery


def _cutoff(now: datetime) -> datetime:
    return now - timedelta(days=settings.LOCKSTEP_ALERT_RETENTION_DAYS)


def prune_alerts(now: datetime) -> int:
    _, per_model = Alert.objects.filter(state=RESOLVED, resolved_at__lt=_cutoff(now)).delete()
    return per_model.get(Alert._meta.label, 0)


def prune_test_deliveries(now: datetime) -> int:
    old = Delivery.objects.filter(alert__isnull=True, created_at__lt=_cutoff(now))
    deleted, _ = old.delete()
    return deleted
