from __future__ import annotations

import threading
import time

import pytest
from django.utils import timezone

from lockstep.dashboard.alerts.dispatch import run
from lockstep.dashboard.alerts.lifecycle import notify
from lockstep.dashboard.alerts.models import Channel, Delivery
from tests.dashboard.alerts.receiver import make_alert, receiver

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_mirrors_the_env_webhooks_then_sends_what_the_evaluator_queues(settings) -> None:
    stop = threading.Event()
    with receiver() as hook:
        settings.LOCKSTEP_ALERT_WEBHOOKS = [{"url": hook.url, "secret": "s"}]
        thread = threading.Thread(target=run, args=(stop,))
        thread.start()
        try:
            deadline = time.monotonic() + 10
            while not Channel.objects.filter(name="env-webhook-1").exists():
                assert time.monotonic() < deadline, "the env channel never appeared"
                time.sleep(0.05)
            (queued,) = notify(make_alert(), Delivery.OPENED, timezone.now())
            while Delivery.objects.get(pk=queued.pk).status != Delivery.SENT:
                assert time.monotonic() < deadline, "the delivery was never sent"
                time.sleep(0.05)
        finally:
            stop.set()
            thread.join(timeout=10)
    assert not thread.is_alive()
    assert [r.json()["event"] for r in hook.requests] == ["opened"]
