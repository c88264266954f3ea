"""Resolved alerts older than LOCKSTEP_ALERT_RETENTION_DAYS (by resolution time) are
pruned with their timeline and deliveries, and so are old test deliveries; open and
acknowledged alerts stay whatever their age."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from lockstep.dashboard.alerts.models import (
    ACKNOWLEDGED,
    OPEN,
    RESOLVED,
    Alert,
    AlertEvent,
    Channel,
    Delivery,
)
from lockstep.dashboard.monitor.tasks import prune_events

pytestmark = pytest.mark.django_db


def _alert(name: str, state: str, age_days: float) -> Alert:
    at = timezone.now() - timedelta(days=age_days)
    alert = Alert.objects.create(
        rule="queue_stuck",
        fingerprint=f"queue_stuck|orders|{name}",
        state=state,
        topic="orders",
        group=name,
        summary=f"{name} stuck",
        since=at,
        opened_at=at,
        last_seen_at=at,
        resolved_at=at if state == RESOLVED else None,
    )
    AlertEvent.objects.create(alert=alert, at=at, kind=AlertEvent.OPENED)
    Delivery.objects.create(
        alert=alert, channel=_channel(), event=Delivery.OPENED, created_at=at, status=Delivery.SENT
    )
    return alert


def _channel() -> Channel:
    channel, _ = Channel.objects.get_or_create(
        name="ops", defaults={"kind": "webhook", "target": "http://127.0.0.1:9/hook"}
    )
    return channel


def test_it_deletes_resolved_alerts_older_than_the_retention_with_their_rows(
    settings: Any,
) -> None:
    settings.LOCKSTEP_ALERT_RETENTION_DAYS = 30
    _alert("old-resolved", RESOLVED, 31)
    kept = [
        _alert("recent-resolved", RESOLVED, 29),
        _alert("old-open", OPEN, 200),
        _alert("old-acknowledged", ACKNOWLEDGED, 200),
    ]

    deleted = prune_events()

    assert deleted == 1
    assert sorted(Alert.objects.values_list("pk", flat=True)) == sorted(a.pk for a in kept)
    assert sorted(AlertEvent.objects.values_list("alert_id", flat=True)) == sorted(
        a.pk for a in kept
    )
    assert sorted(Delivery.objects.values_list("alert_id", flat=True)) == sorted(a.pk for a in kept)


def test_it_deletes_test_deliveries_older_than_the_retention(settings: Any) -> None:
    settings.LOCKSTEP_ALERT_RETENTION_DAYS = 30
    now = timezone.now()
    for age in (40, 31):
        Delivery.objects.create(
            channel=_channel(), event=Delivery.TEST, created_at=now - timedelta(days=age)
        )
    recent = Delivery.objects.create(
        channel=_channel(), event=Delivery.TEST, created_at=now - timedelta(days=2)
    )

    deleted = prune_events()

    assert deleted == 2
    assert list(Delivery.objects.values_list("pk", flat=True)) == [recent.pk]
    assert Channel.objects.filter(name="ops").exists()
