"""Operators acknowledge an alert (who, a note, optionally snoozed until a UTC time) and
open it again; every page's badge hears of it. Viewers get 403; a post without the CSRF
token is refused; a snooze in the past or a date that is none is a 400."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from lockstep.dashboard.alerts import push
from lockstep.dashboard.alerts.models import Alert

pytestmark = pytest.mark.django_db


@pytest.fixture
def open_alert() -> Alert:
    return Alert.objects.create(
        rule="queue_stuck", fingerprint="fp", summary="orders q1 is stuck", since=timezone.now()
    )


def test_an_operator_acknowledges_with_a_note_and_a_snooze(
    client: Client, operator: User, open_alert: Alert
) -> None:
    client.force_login(operator)
    until = (timezone.now() + timedelta(hours=2)).astimezone(UTC).replace(second=0, microsecond=0)

    with mock.patch.object(push, "publish", wraps=push.publish) as published:
        response = client.post(
            f"/alerts/{open_alert.pk}/acknowledge",
            {"note": "looking at it", "snooze_until": until.strftime("%Y-%m-%dT%H:%M")},
        )

    assert response.status_code == 302
    assert response["Location"] == f"/alerts/{open_alert.pk}"
    open_alert.refresh_from_db()
    assert open_alert.state == "acknowledged"
    assert (open_alert.acknowledged_by, open_alert.ack_note) == ("operator", "looking at it")
    assert open_alert.snoozed_until == until
    event = open_alert.timeline.get()
    assert (event.kind, event.actor, event.note) == ("snoozed", "operator", "looking at it")
    assert published.call_count == 1
    page = client.get(response["Location"]).content.decode()
    assert "snoozed until" in page and "UTC" in page


def test_an_operator_opens_an_acknowledged_alert_again(
    client: Client, operator: User, open_alert: Alert
) -> None:
    client.force_login(operator)
    client.post(f"/alerts/{open_alert.pk}/acknowledge", {"note": ""})

    response = client.post(f"/alerts/{open_alert.pk}/unacknowledge")

    assert response.status_code == 302
    open_alert.refresh_from_db()
    assert open_alert.state == "open"
    assert list(open_alert.timeline.values_list("kind", flat=True)) == [
        "acknowledged",
        "unacknowledged",
    ]


def test_a_viewer_may_not_acknowledge(client: Client, viewer: User, open_alert: Alert) -> None:
    client.force_login(viewer)

    response = client.post(f"/alerts/{open_alert.pk}/acknowledge", {"note": "mine"})

    assert response.status_code == 403
    assert "your role does not allow you to acknowledge alerts" in response.content.decode()
    open_alert.refresh_from_db()
    assert open_alert.state == "open"


def test_a_post_without_the_csrf_token_changes_nothing(operator: User, open_alert: Alert) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)

    response = client.post(f"/alerts/{open_alert.pk}/acknowledge", {"note": "x"})

    assert response.status_code == 403
    open_alert.refresh_from_db()
    assert open_alert.state == "open"


@pytest.mark.parametrize(
    ("snooze", "message"),
    [
        ("tomorrow-ish", "snooze until: &#x27;tomorrow-ish&#x27; is not a date and time"),
        ("2001-01-01T00:00", "the snooze must end in the future"),
    ],
)
def test_a_bad_snooze_is_a_400(
    client: Client, operator: User, open_alert: Alert, snooze: str, message: str
) -> None:
    client.force_login(operator)

    response = client.post(f"/alerts/{open_alert.pk}/acknowledge", {"snooze_until": snooze})

    assert response.status_code == 400
    assert message in response.content.decode()
    open_alert.refresh_from_db()
    assert open_alert.state == "open"


def test_a_resolved_alert_cannot_be_acknowledged_or_unacknowledged(
    client: Client, operator: User, open_alert: Alert
) -> None:
    Alert.objects.filter(pk=open_alert.pk).update(state="resolved", resolved_at=datetime.now(UTC))
    client.force_login(operator)

    ack = client.post(f"/alerts/{open_alert.pk}/acknowledge")
    unack = client.post(f"/alerts/{open_alert.pk}/unacknowledge")

    assert ack.status_code == 400
    assert "this alert is resolved" in ack.content.decode()
    assert unack.status_code == 400
    assert "this alert is resolved, not acknowledged" in unack.content.decode()
