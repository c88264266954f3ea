"""The Django admin: rule overrides are checked with the rule's ``Param.parse``, a
channel's secret is never listed nor sent back to the form, alerts are read-mostly."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from lockstep.dashboard.alerts.models import Alert, Channel, RuleSetting
from lockstep.dashboard.alerts.rules import RULES

pytestmark = pytest.mark.django_db

RULE = next(r for r in RULES.values() if r.params)
PARAM = RULE.params[0]
SECRET = "hidden-secret-value"


@pytest.fixture
def superuser(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_superuser("root", password="root-password-1")


def _override(client: Client, params: str) -> str:
    response = client.post(
        "/admin/alerts/rulesetting/add/",
        {"rule": RULE.name, "topic": "orders", "group": "", "enabled": "on", "params": params},
    )
    return response.content.decode() if response.status_code == 200 else ""


def test_it_refuses_a_negative_or_unknown_threshold(client: Client, superuser: User) -> None:
    client.force_login(superuser)

    negative = _override(client, f'{{"{PARAM.name}": -1}}')
    unknown = _override(client, '{"nonsense": 1}')

    assert "must be at least" in negative
    assert f"is not a parameter of {RULE.name}" in unknown
    assert not RuleSetting.objects.exists()


def test_it_stores_a_good_threshold_as_a_number(client: Client, superuser: User) -> None:
    client.force_login(superuser)

    assert _override(client, f'{{"{PARAM.name}": "12"}}') == ""

    assert RuleSetting.objects.get().params == {PARAM.name: 12.0}


def test_it_never_shows_a_channels_secret(client: Client, superuser: User) -> None:
    channel = Channel.objects.create(
        name="ops", kind="webhook", target="http://x.test/h", secret=SECRET
    )
    client.force_login(superuser)

    listing = client.get("/admin/alerts/channel/").content.decode()
    form = client.get(f"/admin/alerts/channel/{channel.pk}/change/").content.decode()

    assert "ops" in listing and SECRET not in listing
    assert 'type="password"' in form and SECRET not in form


def test_it_shows_alerts_without_letting_them_be_added(client: Client, superuser: User) -> None:
    alert = Alert.objects.create(
        rule=RULE.name, fingerprint="fp", summary="it fires", since=timezone.now()
    )
    client.force_login(superuser)

    assert client.get(f"/admin/alerts/alert/{alert.pk}/change/").status_code == 200
    assert client.get("/admin/alerts/alert/add/").status_code == 403
