"""An alert's details read as labels with units on its page and in every notification's
text ("window 5 min", "time lag 0.4 s"), never as raw keys ("window s 300.0"); the
webhook payload keeps the raw keys for machines."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.alerts import lifecycle, payload
from lockstep.dashboard.alerts.channels.base import message_text
from lockstep.dashboard.alerts.models import Alert, Delivery
from lockstep.dashboard.alerts.rules import WARNING, Finding
from tests.dashboard.alerts.findings import T0

pytestmark = pytest.mark.django_db


def _growth() -> Alert:
    finding = Finding(
        rule="dlq_growth",
        severity=WARNING,
        summary="orders / billing: 12 new dead letters in the last 5 min (threshold 10)",
        since_ms=int(T0.timestamp() * 1000),
        topic="orders",
        group="billing",
        details={
            "new_dead_letters": 12,
            "threshold": 10,
            "window_s": 300.0,
            "time_lag_s": 0.4,
            "dlq_id": "17-0",
            "reasons": ["held_key", "no_progress"],
        },
    )
    lifecycle.apply([finding], {"dlq_growth"}, T0)
    return Alert.objects.get(rule="dlq_growth")


def test_the_alert_page_shows_labels_and_units(client: Client, viewer: User) -> None:
    alert = _growth()
    client.force_login(viewer)

    page = client.get(f"/alerts/{alert.pk}").content.decode()

    for label, value in (
        ("window", "5 min"),
        ("time lag", "0.4 s"),
        ("new dead letters", "12"),
        ("threshold (count)", "10"),
        ("dead letter ID", "17-0"),
        ("reasons", "held key, no progress"),
    ):
        assert f'<tr><th>{label}</th><td class="mono wrap">{value}</td></tr>' in page
    assert "window s" not in page and "300.0" not in page


def test_notifications_show_labels_and_units_and_the_payload_raw_keys() -> None:
    alert = _growth()
    body = payload.build(alert, Delivery.OPENED)

    text = message_text(body)

    assert "  window: 5 min" in text
    assert "  time lag: 0.4 s" in text
    assert "window_s" not in text
    assert body["alert"]["details"]["window_s"] == 300.0
