"""Silences: operators create one for a topic, group and/or rule for a duration or
until a time, and end one early; a silence of everything needs its explicit box; the
past ones stay listed. Viewers see them and may not change them."""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from lockstep.dashboard.alerts.models import Silence

pytestmark = pytest.mark.django_db


def test_an_operator_silences_a_topic_and_rule_for_some_minutes(
    client: Client, operator: User
) -> None:
    client.force_login(operator)
    before = timezone.now()

    response = client.post(
        "/alerts/silences/new",
        {"topic": "orders", "rule": "lag_high", "minutes": "30", "reason": "deploy"},
    )

    assert response.status_code == 302
    silence = Silence.objects.get()
    assert (silence.topic, silence.group, silence.rule) == ("orders", "", "lag_high")
    assert (silence.reason, silence.created_by) == ("deploy", "operator")
    length = silence.ends_at - silence.starts_at
    assert timedelta(minutes=30) - timedelta(seconds=1) < length <= timedelta(minutes=30)
    assert silence.starts_at >= before
    page = client.get("/alerts/silences")
    assert [s.pk for s in page.context["data"]["active"]] == [silence.pk]


def test_an_operator_silences_a_group_until_a_utc_time(client: Client, operator: User) -> None:
    client.force_login(operator)
    until = (timezone.now() + timedelta(days=1)).astimezone(UTC).replace(second=0, microsecond=0)

    client.post(
        "/alerts/silences/new", {"group": "billing", "ends_at": until.strftime("%Y-%m-%dT%H:%M")}
    )

    assert Silence.objects.get().ends_at == until


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"minutes": "10"}, "a silence of everything needs the"),
        ({"topic": "orders"}, "give either a duration in minutes or an end time"),
        (
            {"topic": "orders", "minutes": "5", "ends_at": "2099-01-01T00:00"},
            "give either a duration in minutes or an end time",
        ),
        ({"topic": "orders", "minutes": "-5"}, "duration: must be more than 0"),
        ({"topic": "orders", "minutes": "soon"}, "is not a number of minutes"),
        ({"topic": "orders", "ends_at": "2001-01-01T00:00"}, "the silence must end in the future"),
        ({"topic": "orders", "ends_at": "next week"}, "is not a date and time"),
        ({"rule": "bogus", "minutes": "5"}, "rule must be one of"),
    ],
)
def test_it_refuses_a_silence_it_cannot_use(
    client: Client, operator: User, form: dict[str, str], message: str
) -> None:
    client.force_login(operator)

    response = client.post("/alerts/silences/new", form)

    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Silence.objects.exists()


def test_a_silence_of_everything_needs_the_box_ticked(client: Client, operator: User) -> None:
    client.force_login(operator)

    response = client.post("/alerts/silences/new", {"minutes": "10", "everything": "1"})

    assert response.status_code == 302
    silence = Silence.objects.get()
    assert (silence.topic, silence.group, silence.rule) == ("", "", "")


def test_ending_a_silence_early_keeps_it_in_the_history(client: Client, operator: User) -> None:
    silence = Silence.objects.create(topic="orders", ends_at=timezone.now() + timedelta(hours=1))
    client.force_login(operator)

    response = client.post(f"/alerts/silences/{silence.pk}/end")

    assert response.status_code == 302
    silence.refresh_from_db()
    assert silence.ends_at <= timezone.now()
    page = client.get("/alerts/silences")
    assert page.context["data"]["active"] == []
    assert [s.pk for s in page.context["data"]["past"]] == [silence.pk]


def test_a_viewer_sees_silences_but_may_not_create_or_end_them(
    client: Client, viewer: User
) -> None:
    silence = Silence.objects.create(topic="orders", ends_at=timezone.now() + timedelta(hours=1))
    client.force_login(viewer)

    page = client.get("/alerts/silences")
    create = client.post("/alerts/silences/new", {"topic": "x", "minutes": "5"})
    end = client.post(f"/alerts/silences/{silence.pk}/end")

    assert page.status_code == 200
    assert 'id="silence-form"' not in page.content.decode()
    assert (create.status_code, end.status_code) == (403, 403)
    assert Silence.objects.count() == 1
    silence.refresh_from_db()
    assert silence.ends_at > timezone.now()
