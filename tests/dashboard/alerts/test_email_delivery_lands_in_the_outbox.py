from __future__ import annotations

import pytest
from django.core import mail
from django.utils import timezone

from lockstep.dashboard.alerts.channels import KINDS
from lockstep.dashboard.alerts.dispatch import send_due
from lockstep.dashboard.alerts.lifecycle import notify
from lockstep.dashboard.alerts.models import Channel, Delivery
from tests.dashboard.alerts.receiver import make_alert

pytestmark = pytest.mark.django_db


def test_it_mails_the_headline_and_the_details_to_every_address(settings) -> None:
    settings.DEFAULT_FROM_EMAIL = "lockstep@example.com"
    Channel.objects.create(name="ops-mail", kind="email", target="ops@example.com, b@example.com")
    alert = make_alert()
    (queued,) = notify(alert, Delivery.OPENED, timezone.now())
    assert send_due() == 1
    (message,) = mail.outbox
    assert message.subject == (
        "[ALERT] queue_stuck (critical): orders / billing / queue 3 has not moved for 90 s"
    )
    assert message.to == ["ops@example.com", "b@example.com"]
    assert message.from_email == "lockstep@example.com"
    assert "Subject: orders / billing / queue 3\n" in message.body
    assert "stuck: 1 min 30 s" in message.body  # labelled, with its unit
    assert Delivery.objects.get(pk=queued.pk).status == Delivery.SENT


def test_it_keeps_a_long_summary_to_one_short_subject_line() -> None:
    Channel.objects.create(name="ops-mail", kind="email", target="ops@example.com")
    notify(make_alert(summary="line one\nline two " + "x" * 400), Delivery.OPENED, timezone.now())
    send_due()
    (message,) = mail.outbox
    assert "\n" not in message.subject
    assert len(message.subject) <= 200


@pytest.mark.parametrize("target", ["", "ops@example.com, not-an-address", "ops"])
def test_it_refuses_a_target_that_is_not_a_list_of_addresses(target: str) -> None:
    with pytest.raises(ValueError, match="address"):
        KINDS["email"].validate(target, "", "")
