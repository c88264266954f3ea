"""One alert's page: the rule and its description, the subject, the details, the times,
the timeline, the delivery attempts and the links to the queue and the dead letters."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from lockstep.dashboard.alerts.models import Alert, AlertEvent, Channel, Delivery
from lockstep.dashboard.alerts.rules import RULES

pytestmark = pytest.mark.django_db


@pytest.fixture
def blocked() -> Alert:
    now = timezone.now()
    alert = Alert.objects.create(
        rule="message_blocked",
        fingerprint="message_blocked|orders|billing|3|cust-7|",
        severity="critical",
        topic="orders",
        group="billing",
        queue=3,
        key="cust-7",
        offset=41,
        summary="billing is stuck on orders q3 offset 41",
        details={"attempts": 5, "error": "<ValueError> bad & worse"},
        since=now - timedelta(minutes=10),
        opened_at=now - timedelta(minutes=5),
    )
    AlertEvent.objects.create(alert=alert, kind="opened", note="it began")
    AlertEvent.objects.create(alert=alert, kind="acknowledged", actor="olga", note="on it")
    hook = Channel.objects.create(name="ops-hook", kind="webhook", target="http://x.test/h")
    Delivery.objects.create(
        alert=alert,
        channel=hook,
        event="opened",
        status="failed",
        attempts=4,
        last_error="HTTP 500 from the receiver",
    )
    return alert


def test_it_shows_the_rule_subject_details_timeline_and_deliveries(
    client: Client, viewer: User, blocked: Alert
) -> None:
    client.force_login(viewer)

    response = client.get(f"/alerts/{blocked.pk}")

    assert response.status_code == 200
    page = response.content.decode()
    assert RULES["message_blocked"].description in page
    assert "billing is stuck on orders q3 offset 41" in page
    for value in ("orders", "billing", "cust-7", ">41<"):
        assert value in page
    assert "&lt;ValueError&gt; bad &amp; worse" in page  # escaped, as everything it shows
    data = response.context["data"]
    assert [e.kind for e in data["timeline"]] == ["opened", "acknowledged"]
    assert "on it" in page and "olga" in page
    (delivery,) = data["deliveries"]
    assert (delivery.channel.name, delivery.status, delivery.attempts) == ("ops-hook", "failed", 4)
    assert "HTTP 500 from the receiver" in page


def test_it_links_the_queue_and_the_alerts_dead_letters(
    client: Client, viewer: User, blocked: Alert
) -> None:
    client.force_login(viewer)

    response = client.get(f"/alerts/{blocked.pk}")

    page = response.content.decode()
    links = response.context["data"]["links"]
    assert links["queue"] == reverse("queue", args=["orders", 3])
    assert links["dead_letters"] == "/groups/billing/dead-letters?topic=orders&queue=3&key=cust-7"
    assert f'href="{links["queue"]}"' in page
    assert 'href="/groups/billing/dead-letters?topic=orders&amp;queue=3&amp;key=cust-7"' in page


def test_it_shows_viewers_no_acknowledge_form(client: Client, viewer: User, blocked: Alert) -> None:
    client.force_login(viewer)

    page = client.get(f"/alerts/{blocked.pk}").content.decode()

    assert 'id="acknowledge-form"' not in page
