from __future__ import annotations

import hashlib
import hmac
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from lockstep.dashboard.alerts import payload
from lockstep.dashboard.alerts.channels.webhook import slack_body
from lockstep.dashboard.alerts.dispatch import claim, send_due
from lockstep.dashboard.alerts.lifecycle import notify
from lockstep.dashboard.alerts.models import Channel, Delivery
from tests.dashboard.alerts.receiver import make_alert, receiver

pytestmark = pytest.mark.django_db

SECRET = "s3cret-for-the-test"


def test_it_posts_the_exact_payload_signed_with_the_channel_secret() -> None:
    with receiver() as hook:
        Channel.objects.create(name="ops-hook", kind="webhook", target=hook.url, secret=SECRET)
        alert = make_alert()
        (queued,) = notify(alert, Delivery.OPENED, timezone.now())
        assert send_due() == 1
    (got,) = hook.requests
    expected = hmac.new(SECRET.encode(), got.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(got.headers["X-Lockstep-Signature"], f"sha256={expected}")
    assert got.json() == json.loads(json.dumps(queued.payload))
    assert got.json()["alert"]["id"] == alert.pk
    assert got.headers["Content-Type"] == "application/json"
    assert got.headers["X-Lockstep-Event"] == "opened"
    assert got.headers["X-Lockstep-Delivery"] == str(queued.pk)
    assert got.headers["User-Agent"] == "Lockstep-Alerts/1"
    delivery = Delivery.objects.get(pk=queued.pk)
    assert (delivery.status, delivery.attempts) == (Delivery.SENT, 1)
    assert delivery.delivered_at is not None


def test_it_sends_no_signature_without_a_secret() -> None:
    with receiver() as hook:
        Channel.objects.create(name="open-hook", kind="webhook", target=hook.url)
        notify(make_alert(), Delivery.OPENED, timezone.now())
        send_due()
    (got,) = hook.requests
    assert "X-Lockstep-Signature" not in got.headers


def test_it_posts_a_slack_text_in_the_slack_format() -> None:
    with receiver() as hook:
        Channel.objects.create(name="chat", kind="webhook", target=hook.url, format="slack")
        alert = make_alert()
        (queued,) = notify(alert, Delivery.OPENED, timezone.now())
        send_due()
    body = hook.requests[0].json()
    assert set(body) == {"text"}
    assert body["text"].startswith("[ALERT] queue_stuck (critical): orders / billing / queue 3")
    link = queued.payload["alert"]["url"]
    assert body["text"].endswith(f"\n{link}" if link else "not moved for 90 s")


def test_it_links_the_alert_page_in_the_slack_text() -> None:
    message = payload.build(make_alert(), Delivery.RESOLVED)
    message["alert"]["url"] = "https://lockstep.example.com/alerts/7/"
    text = slack_body(message)["text"]
    assert text.startswith("[RESOLVED] queue_stuck")
    assert text.endswith("\nhttps://lockstep.example.com/alerts/7/")


def test_it_retries_a_receiver_that_fails_at_first_until_it_succeeds() -> None:
    with receiver(statuses=[500, 503]) as hook:
        Channel.objects.create(name="flaky", kind="webhook", target=hook.url, secret=SECRET)
        now = timezone.now()
        (queued,) = notify(make_alert(), Delivery.OPENED, now)
        send_due(now=now)
        first = Delivery.objects.get(pk=queued.pk)
        assert (first.status, first.attempts) == (Delivery.PENDING, 1)
        assert "HTTP 500" in first.last_error
        assert first.next_attempt_at > now
        assert send_due(now=now + timedelta(milliseconds=100)) == 0  # backing off
        while first.status == Delivery.PENDING and len(hook.requests) < 10:
            send_due(now=first.next_attempt_at)
            first.refresh_from_db()
    assert len(hook.requests) == 3
    assert (first.status, first.attempts, first.last_error) == (Delivery.SENT, 3, "")


def test_it_fails_after_the_last_attempt_and_shows_it_on_the_alert(settings) -> None:
    settings.LOCKSTEP_ALERT_DELIVERY_ATTEMPTS = 3
    with receiver(statuses=[500] * 10) as hook:
        Channel.objects.create(name="down", kind="webhook", target=hook.url)
        alert = make_alert()
        now = timezone.now()
        (queued,) = notify(alert, Delivery.OPENED, now)
        for _ in range(10):
            send_due(now=now)
            now += timedelta(seconds=600)
    delivery = Delivery.objects.get(pk=queued.pk)
    assert (delivery.status, delivery.attempts) == (Delivery.FAILED, 3)
    assert len(hook.requests) == 3
    (event,) = alert.timeline.filter(kind="delivery_failed")
    assert "down" in event.note and "HTTP 500" in event.note


def test_it_fails_at_once_on_a_404() -> None:
    with receiver(statuses=[404]) as hook:
        Channel.objects.create(name="gone", kind="webhook", target=hook.url)
        alert = make_alert()
        now = timezone.now()
        (queued,) = notify(alert, Delivery.OPENED, now)
        send_due(now=now)
        send_due(now=now + timedelta(hours=1))
    delivery = Delivery.objects.get(pk=queued.pk)
    assert (delivery.status, delivery.attempts) == (Delivery.FAILED, 1)
    assert "HTTP 404" in delivery.last_error
    assert len(hook.requests) == 1
    assert alert.timeline.filter(kind="delivery_failed").count() == 1


def test_it_retries_when_nothing_listens() -> None:
    with receiver() as hook:
        url = hook.url
    Channel.objects.create(name="nobody", kind="webhook", target=url)
    now = timezone.now()
    (queued,) = notify(make_alert(), Delivery.OPENED, now)
    send_due(now=now)
    delivery = Delivery.objects.get(pk=queued.pk)
    assert (delivery.status, delivery.attempts) == (Delivery.PENDING, 1)
    assert "could not reach" in delivery.last_error


def test_it_fails_a_pending_delivery_of_a_channel_disabled_meanwhile() -> None:
    with receiver() as hook:
        channel = Channel.objects.create(name="later-off", kind="webhook", target=hook.url)
        alert = make_alert()
        (queued,) = notify(alert, Delivery.OPENED, timezone.now())
        Channel.objects.filter(pk=channel.pk).update(enabled=False)
        send_due()
    assert hook.requests == []
    delivery = Delivery.objects.get(pk=queued.pk)
    assert delivery.status == Delivery.FAILED
    assert "disabled" in delivery.last_error


def test_it_never_sends_a_row_another_dispatcher_claimed() -> None:
    with receiver() as hook:
        Channel.objects.create(name="once", kind="webhook", target=hook.url)
        now = timezone.now()
        (queued,) = notify(make_alert(), Delivery.OPENED, now)
        stale = Delivery.objects.get(pk=queued.pk)  # read by us
        assert claim(Delivery.objects.get(pk=queued.pk), now) is True  # by another one
        assert claim(stale, now) is False
        assert send_due(now=now) == 0  # leased: not due
    assert hook.requests == []
