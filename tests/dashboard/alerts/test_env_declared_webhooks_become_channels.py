from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from lockstep.dashboard.alerts.env_channels import parse_email_to, parse_webhooks, sync_env_channels
from lockstep.dashboard.alerts.models import Channel

pytestmark = pytest.mark.django_db


def test_it_creates_a_channel_per_declared_webhook_and_one_for_the_addresses(settings) -> None:
    settings.LOCKSTEP_ALERT_WEBHOOKS = parse_webhooks(
        '[{"url": "https://a.example.com/h", "secret": "s1"},'
        ' {"url": "http://b.example.com/h", "format": "slack"}]'
    )
    settings.LOCKSTEP_ALERT_EMAIL_TO = ["ops@example.com", "oncall@example.com"]
    names = [c.name for c in sync_env_channels()]
    assert names == ["env-webhook-1", "env-webhook-2", "env-email"]
    rows = {c.name: c for c in Channel.objects.all()}
    first, second, email = rows["env-webhook-1"], rows["env-webhook-2"], rows["env-email"]
    assert (first.kind, first.target, first.secret, first.format) == (
        "webhook",
        "https://a.example.com/h",
        "s1",
        "json",
    )
    assert (second.format, second.secret) == ("slack", "")
    assert (email.kind, email.target) == ("email", "ops@example.com, oncall@example.com")
    assert all(c.from_env and c.enabled for c in rows.values())


def test_it_updates_changed_ones_and_disables_those_no_longer_declared(settings) -> None:
    settings.LOCKSTEP_ALERT_WEBHOOKS = [{"url": "https://a.example.com/h"}, {"url": "https://b"}]
    settings.LOCKSTEP_ALERT_EMAIL_TO = ["ops@example.com"]
    sync_env_channels()
    settings.LOCKSTEP_ALERT_WEBHOOKS = [{"url": "https://new.example.com/h", "secret": "s2"}]
    settings.LOCKSTEP_ALERT_EMAIL_TO = []
    sync_env_channels()
    rows = {c.name: c for c in Channel.objects.all()}
    assert set(rows) == {"env-webhook-1", "env-webhook-2", "env-email"}  # none deleted
    assert (rows["env-webhook-1"].target, rows["env-webhook-1"].secret) == (
        "https://new.example.com/h",
        "s2",
    )
    assert rows["env-webhook-1"].enabled
    assert not rows["env-webhook-2"].enabled
    assert not rows["env-email"].enabled


def test_it_leaves_channels_made_in_the_ui_alone(settings) -> None:
    mine = Channel.objects.create(name="env-webhook-1", kind="email", target="me@example.com")
    other = Channel.objects.create(name="team", kind="webhook", target="https://t.example.com")
    settings.LOCKSTEP_ALERT_WEBHOOKS = [{"url": "https://a.example.com/h"}]
    assert sync_env_channels() == []
    mine.refresh_from_db()
    other.refresh_from_db()
    assert (mine.kind, mine.from_env, other.enabled) == ("email", False, True)


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ('[{"url": "https://a.example.com"', "not valid JSON"),
        ('{"url": "https://a.example.com"}', "JSON list"),
        ('[{"secret": "s"}]', 'entry 1 must be an object with a "url"'),
        ('[{"url": "https://a"}, {"url": "ftp://b"}]', "entry 2: the webhook URL must start"),
        ('[{"url": "https://a", "format": "xml"}]', "format must be one of json, slack"),
        ('[{"url": "https://a", "sekret": "s"}]', "unknown keys: sekret"),
    ],
)
def test_it_refuses_a_bad_declaration_with_a_clear_message(raw: str, says: str) -> None:
    with pytest.raises(ImproperlyConfigured, match="LOCKSTEP_ALERT_WEBHOOKS") as caught:
        parse_webhooks(raw)
    assert says in str(caught.value)


def test_it_reads_blank_as_nothing_declared() -> None:
    assert parse_webhooks("  ") == []
    assert parse_email_to("") == []


def test_it_refuses_a_bad_address_in_the_email_list() -> None:
    with pytest.raises(ImproperlyConfigured, match="LOCKSTEP_ALERT_EMAIL_TO: 'nope'"):
        parse_email_to("ops@example.com, nope")
