"""The alerts list: unresolved by default, the history on request, each filter, the
text search and the pages."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from lockstep.dashboard.alerts import pages
from lockstep.dashboard.alerts.models import Alert

pytestmark = pytest.mark.django_db


def alert(n: int, **fields: Any) -> Alert:
    now = timezone.now()
    values: dict[str, Any] = {
        "rule": "queue_stuck",
        "fingerprint": f"fp-{n}",
        "summary": f"alert number {n}",
        "topic": "orders",
        "group": "billing",
        "since": now,
        "opened_at": now - timedelta(minutes=100 - n),
        **fields,
    }
    return Alert.objects.create(**values)


def shown(client: Client, query: str = "") -> list[int]:
    response = client.get("/alerts" + query)
    assert response.status_code == 200
    return [a.pk for a in response.context["data"]["alerts"]]


def test_it_lists_unresolved_alerts_newest_first_by_default(client: Client, viewer: User) -> None:
    older = alert(1)
    acked = alert(2, state="acknowledged", acknowledged_by="olga")
    alert(3, state="resolved", resolved_at=timezone.now())
    client.force_login(viewer)

    assert shown(client) == [acked.pk, older.pk]
    page = client.get("/alerts").content.decode()
    assert "olga" in page
    assert 'href="?state=all"' in page


def test_it_shows_the_history_and_each_state(client: Client, viewer: User) -> None:
    a, b, c = alert(1), alert(2, state="acknowledged"), alert(3, state="resolved")
    client.force_login(viewer)

    assert shown(client, "?state=all") == [c.pk, b.pk, a.pk]
    assert shown(client, "?state=resolved") == [c.pk]
    assert shown(client, "?state=open") == [a.pk]


def test_it_filters_by_rule_severity_topic_group_and_summary(client: Client, viewer: User) -> None:
    lag = alert(1, rule="lag_high", severity="critical")
    other_topic = alert(2, topic="payments", summary="payments are stuck")
    other_group = alert(3, group="mailer")
    client.force_login(viewer)

    assert shown(client, "?rule=lag_high") == [lag.pk]
    assert shown(client, "?severity=critical") == [lag.pk]
    assert shown(client, "?topic=payments") == [other_topic.pk]
    assert shown(client, "?group=mailer") == [other_group.pk]
    assert shown(client, "?q=STUCK") == [other_topic.pk]
    assert shown(client, "?topic=orders&group=billing&rule=queue_stuck") == []


def test_it_pages_through_many_alerts_keeping_the_filters(client: Client, viewer: User) -> None:
    for n in range(pages.PAGE_SIZE + 3):
        alert(n, fingerprint=f"many-{n}")
    client.force_login(viewer)

    first = client.get("/alerts?topic=orders")
    second = client.get("/alerts?topic=orders&page=2")

    assert len(first.context["data"]["alerts"]) == pages.PAGE_SIZE
    assert first.context["data"]["next"] == "?topic=orders&page=2"
    assert len(second.context["data"]["alerts"]) == 3
    assert second.context["data"]["previous"] == "?topic=orders&page=1"


def test_it_sends_an_anonymous_visitor_to_the_login_page(client: Client) -> None:
    response = client.get("/alerts")

    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_it_refuses_a_user_without_a_role(client: Client, django_user_model: type[User]) -> None:
    client.force_login(django_user_model.objects.create_user("nobody", password="x-pass-12"))

    response = client.get("/alerts")

    assert response.status_code == 403
    assert "your role does not allow you" in response.content.decode()
