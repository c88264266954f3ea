"""One unresolved alert per rule and subject: a subject that keeps firing never opens a
second one; once resolved (keeping its duration), the condition returning opens a new
alert, and channels told of the first are told it resolved."""

from __future__ import annotations

import pytest
from django.db import IntegrityError

from lockstep.dashboard.alerts import lifecycle
from lockstep.dashboard.alerts.models import Alert, Delivery
from tests.dashboard.alerts.findings import later, stuck, webhook_channel

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("without_group_delays")]

ALL = {"queue_stuck"}


def test_the_condition_returning_opens_a_new_alert() -> None:
    webhook_channel()
    for t in (0, 2, 4):
        lifecycle.apply([stuck(), stuck(queue=5)], ALL, later(t))
    assert Alert.objects.count() == 2

    changes = lifecycle.apply([stuck(queue=5)], ALL, later(10))
    first = Alert.objects.get(queue=3)
    assert [a.pk for a in changes.resolved] == [first.pk]
    assert first.state == "resolved" and first.duration_s == pytest.approx(10)
    assert Delivery.objects.filter(alert=first, event=Delivery.RESOLVED).count() == 1

    lifecycle.apply([stuck(), stuck(queue=5)], ALL, later(20))
    alerts = Alert.objects.filter(queue=3).order_by("id")
    assert [a.state for a in alerts] == ["resolved", "open"]
    assert Alert.objects.filter(queue=5).count() == 1


def test_a_rule_that_was_not_evaluated_resolves_nothing() -> None:
    lifecycle.apply([stuck()], ALL, later(0))
    lifecycle.apply([], set(), later(5))  # the rule failed this tick
    assert Alert.objects.get().state == "open"


def test_the_database_refuses_a_second_unresolved_alert_for_a_subject() -> None:
    lifecycle.apply([stuck()], ALL, later(0))
    twin = Alert.objects.get()
    twin.pk = None
    with pytest.raises(IntegrityError):
        twin.save()
