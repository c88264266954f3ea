"""An open alert is told again every re-notification interval until someone acknowledges
it; a snooze ends the acknowledgement at its time and the alert is told again."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from lockstep.dashboard.alerts import lifecycle
from lockstep.dashboard.alerts.models import Alert, AlertEvent, Delivery
from tests.dashboard.alerts.findings import later, stuck, webhook_channel

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("without_group_delays")]

ALL = {"queue_stuck"}


def deliveries(event: str) -> int:
    return Delivery.objects.filter(event=event).count()


def test_it_renotifies_an_open_alert_until_it_is_acknowledged(settings: Any) -> None:
    settings.LOCKSTEP_ALERT_RENOTIFY_SECONDS = 60
    webhook_channel()
    lifecycle.apply([stuck()], ALL, later(0))
    assert deliveries(Delivery.OPENED) == 1
    lifecycle.apply([stuck()], ALL, later(30))
    assert deliveries(Delivery.RENOTIFY) == 0
    lifecycle.apply([stuck()], ALL, later(61))
    assert deliveries(Delivery.RENOTIFY) == 1

    alert = Alert.objects.get()
    lifecycle.acknowledge(alert, "olga", "looking at the payment service")
    for t in (130, 200, 400):
        lifecycle.apply([stuck()], ALL, later(t))
    assert deliveries(Delivery.RENOTIFY) == 1
    alert.refresh_from_db()
    assert alert.state == "acknowledged" and alert.acknowledged_by == "olga"
    event = alert.timeline.get(kind=AlertEvent.ACKNOWLEDGED)
    assert (event.actor, event.note) == ("olga", "looking at the payment service")


def test_a_snoozed_alert_wakes_and_is_told_again_when_the_snooze_ends(settings: Any) -> None:
    settings.LOCKSTEP_ALERT_RENOTIFY_SECONDS = 3600
    webhook_channel()
    lifecycle.apply([stuck()], ALL, later(0))
    alert = Alert.objects.get()
    wake_at = timezone.now() + (later(300) - later(0))
    lifecycle.acknowledge(alert, "olga", "after the deploy", snooze_until=wake_at)
    lifecycle.apply([stuck()], ALL, wake_at - (later(1) - later(0)))
    assert deliveries(Delivery.RENOTIFY) == 0
    lifecycle.apply([stuck()], ALL, wake_at + (later(1) - later(0)))
    alert.refresh_from_db()
    assert alert.state == "open" and alert.snoozed_until is None
    assert deliveries(Delivery.RENOTIFY) == 1
    assert alert.timeline.filter(kind=AlertEvent.WOKE).count() == 1


def test_a_resolved_alert_cannot_be_acknowledged() -> None:
    lifecycle.apply([stuck()], ALL, later(0))
    lifecycle.apply([], ALL, later(5))
    alert = Alert.objects.get()
    with pytest.raises(ValueError, match="resolved"):
        lifecycle.acknowledge(alert, "olga")
