"""The dispatcher thread mirrors the env-declared webhooks, then sends what is queued.

The test database is SQLite's shared-cache in-memory database: there a connection that
touches a table another thread's connection is writing gets "database table is locked"
at once (the busy timeout does not apply, unlike the WAL file the product runs on). So
this test watches the thread through its log and the receiver, not by polling tables,
and reads the outcome after the thread has stopped."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import pytest
from django.db import OperationalError
from django.utils import timezone

from lockstep.dashboard.alerts.dispatch import run
from lockstep.dashboard.alerts.lifecycle import notify
from lockstep.dashboard.alerts.models import Delivery
from tests.dashboard.alerts.receiver import make_alert, receiver
from tests.support import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

T = TypeVar("T")


def _while_the_dispatcher_reads(write: Callable[[], T]) -> T:
    """Run ``write`` (one transaction), again if a dispatcher's query held its table."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return write()
        except OperationalError as exc:
            if "table is locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)  # the dispatcher's query holds the table for a moment


def test_it_mirrors_the_env_webhooks_then_sends_what_the_evaluator_queues(
    settings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="lockstep.dashboard.alerts.dispatch")
    stop = threading.Event()
    with receiver() as hook:
        settings.LOCKSTEP_ALERT_WEBHOOKS = [{"url": hook.url, "secret": "s"}]
        alert = make_alert()
        thread = threading.Thread(target=run, args=(stop,))
        thread.start()
        try:
            wait_until(
                lambda: "alert channels from the environment: 1" in caplog.messages,
                10,
                "the env channel's mirroring",
            )
            (queued,) = _while_the_dispatcher_reads(
                lambda: notify(alert, Delivery.OPENED, timezone.now())
            )
            wait_until(lambda: hook.requests, 10, "the delivery to the webhook")
        finally:
            stop.set()
            thread.join(timeout=10)
    assert not thread.is_alive()
    assert [r.json()["event"] for r in hook.requests] == ["opened"]
    sent = Delivery.objects.select_related("channel").get(pk=queued.pk)
    assert (sent.status, sent.channel.name) == (Delivery.SENT, "env-webhook-1")
