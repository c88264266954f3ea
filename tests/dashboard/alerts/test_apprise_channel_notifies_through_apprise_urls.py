from __future__ import annotations

import pytest
from django.utils import timezone

from lockstep.dashboard.alerts.channels import KINDS
from lockstep.dashboard.alerts.dispatch import send_due
from lockstep.dashboard.alerts.lifecycle import notify
from lockstep.dashboard.alerts.models import Channel, Delivery
from tests.dashboard.alerts.receiver import make_alert, receiver

pytestmark = pytest.mark.django_db


def test_it_sends_the_headline_and_message_to_an_apprise_json_url() -> None:
    with receiver() as hook:
        target = hook.url.replace("http://", "json://")
        Channel.objects.create(name="apprise", kind="apprise", target=target)
        (queued,) = notify(make_alert(), Delivery.OPENED, timezone.now())
        assert send_due() == 1
    (got,) = hook.requests
    body = got.json()
    assert got.path == "/hook"
    assert body["title"] == (
        "[ALERT] queue_stuck (critical): orders / billing / queue 3 has not moved for 90 s"
    )
    assert body["message"].startswith("orders / billing / queue 3 has not moved for 90 s")
    assert body["type"] == "failure"
    assert Delivery.objects.get(pk=queued.pk).status == Delivery.SENT


def test_it_retries_when_the_apprise_service_fails() -> None:
    with receiver(statuses=[500]) as hook:
        target = hook.url.replace("http://", "json://")
        Channel.objects.create(name="apprise", kind="apprise", target=target)
        (queued,) = notify(make_alert(), Delivery.OPENED, timezone.now())
        send_due()
    delivery = Delivery.objects.get(pk=queued.pk)
    assert (delivery.status, delivery.attempts) == (Delivery.PENDING, 1)
    assert delivery.last_error.startswith("apprise could not notify")


def test_it_accepts_known_urls_and_refuses_unknown_ones() -> None:
    KINDS["apprise"].validate(
        "json://127.0.0.1:9/x, tgram://123456789:abcdefg_hijklmnop/12", "", ""
    )
    with pytest.raises(ValueError, match="nosuchservice://"):
        KINDS["apprise"].validate("nosuchservice://whatever", "", "")
    with pytest.raises(ValueError, match="at least one"):
        KINDS["apprise"].validate(" ", "", "")
