"""A silence mutes notifications of the alerts it matches (the alert still opens and
shows), only while it is active, and only for its topic, group or rule."""

from __future__ import annotations

from typing import Any

import pytest

from lockstep.dashboard.alerts import lifecycle
from lockstep.dashboard.alerts.models import Alert, AlertEvent, Delivery, Silence
from tests.dashboard.alerts.findings import later, stuck, webhook_channel

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("without_group_delays")]

ALL = {"queue_stuck"}


def test_a_matching_silence_keeps_the_alert_but_sends_nothing(settings: Any) -> None:
    settings.LOCKSTEP_ALERT_RENOTIFY_SECONDS = 60
    webhook_channel()
    silence = Silence.objects.create(
        group="billing", starts_at=later(-10), ends_at=later(100), reason="maintenance"
    )
    for t in (0, 61, 99):
        lifecycle.apply([stuck()], ALL, later(t))
    alert = Alert.objects.get()
    assert alert.state == "open"
    assert Delivery.objects.count() == 0
    muted = alert.timeline.filter(kind=AlertEvent.SILENCED)
    assert muted.count() == 1 and muted.get().details["silence"] == silence.pk

    # The silence ends while the alert still fires: it is told now.
    lifecycle.apply([stuck()], ALL, later(101))
    assert list(Delivery.objects.values_list("event", flat=True)) == [Delivery.RENOTIFY]


def test_a_silence_of_another_group_or_rule_does_not_mute() -> None:
    webhook_channel()
    Silence.objects.create(group="mailer", starts_at=later(-10), ends_at=later(100))
    Silence.objects.create(rule="lag_high", starts_at=later(-10), ends_at=later(100))
    lifecycle.apply([stuck()], ALL, later(0))
    assert Delivery.objects.filter(event=Delivery.OPENED).count() == 1


def test_a_resolution_under_a_silence_is_not_sent() -> None:
    webhook_channel()
    lifecycle.apply([stuck()], ALL, later(0))
    Silence.objects.create(topic="orders", starts_at=later(1), ends_at=later(100))
    lifecycle.apply([], ALL, later(5))
    assert Delivery.objects.filter(event=Delivery.RESOLVED).count() == 0
    assert Alert.objects.get().state == "resolved"
