from __future__ import annotations

import pytest

from lockstep.dashboard.alerts.dispatch import send_due, send_test
from lockstep.dashboard.alerts.models import Channel, Delivery
from tests.dashboard.alerts.receiver import receiver

pytestmark = pytest.mark.django_db


def test_it_sends_a_test_event_and_returns_a_sent_delivery() -> None:
    with receiver() as hook:
        channel = Channel.objects.create(name="hook", kind="webhook", target=hook.url)
        delivery = send_test(channel)
    assert (delivery.status, delivery.alert, delivery.event) == (Delivery.SENT, None, "test")
    (got,) = hook.requests
    assert got.json()["event"] == "test"
    assert got.headers["X-Lockstep-Event"] == "test"
    assert Delivery.objects.get(pk=delivery.pk).status == Delivery.SENT


def test_it_reports_a_failure_at_once_without_retrying() -> None:
    with receiver(statuses=[503, 503]) as hook:
        channel = Channel.objects.create(name="hook", kind="webhook", target=hook.url)
        delivery = send_test(channel)
        assert send_due() == 0
    assert (delivery.status, delivery.attempts) == (Delivery.FAILED, 1)
    assert "HTTP 503" in delivery.last_error
    assert len(hook.requests) == 1
