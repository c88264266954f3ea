"""Every alert text names its subject as the pages do (``orders / billing / queue 0``, the
overview's words), never as Python writes a tuple (``('orders', 'billing', 0)``) or a
string (``key 'order-100'``): the alert's page and the alerts list, the toast, the mail,
the webhook's JSON and Slack texts, and apprise's. The webhook's machine fields keep
their raw values (docs/alerts-delivery.md). On a hand-built state in the suite's
Redis: two keys of queue 0 held behind their dead letters, one ``key_held`` alert each,
told in one notification of the group."""

from __future__ import annotations

import html
import json
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client

from lockstep.dashboard.alerts import push
from lockstep.dashboard.alerts.dispatch import send_due
from lockstep.dashboard.alerts.evaluate import Evaluator
from lockstep.dashboard.alerts.models import Alert, Channel
from lockstep.workers import create_topic, keys
from lockstep.workers.inspect import redis_now_ms
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group
from tests.dashboard.alerts.receiver import receiver

pytestmark = pytest.mark.django_db

Q0 = QueueRef("orders", 0)
WHERE = "orders / billing / queue 0"
# How the texts read before (a tuple, quoted keys, ``orders/billing queue 0``).
PYTHON = ("('orders'", "'order-100'", "'order-900'", "orders/billing")


@pytest.fixture(autouse=True)
def told_at_once(settings: Any) -> None:
    settings.LOCKSTEP_ALERT_HELD_AFTER_SECONDS = 0
    settings.LOCKSTEP_ALERT_GROUP_WAIT_SECONDS = 0


def _hold_two_keys(client: redis.Redis) -> None:
    create_topic(client, "orders", 1)
    register_group(client, "orders", "billing")
    now = redis_now_ms(client)
    client.set(keys.sequence(Q0), 20)
    client.hset(keys.offset(Q0, "billing"), mapping={"committed": 20, "token": 1})
    for key, offset in (("order-100", 4), ("order-900", 10)):
        hold = {"state": "held", "since": now - 5_000, "offset": offset, "dlq_id": f"{offset}-0"}
        client.hset(keys.parked_keys(Q0, "billing"), key, json.dumps(hold))
        client.zadd(
            keys.parked_messages(Q0, "billing", key),
            {json.dumps({"o": o, "k": key, "t": now}): o for o in (offset + 1, offset + 2)},
        )


def _assert_no_python(text: str) -> None:
    for python in PYTHON:
        assert python not in text, (python, text)


def test_every_text_names_the_queue_and_keys_as_the_pages_do(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    with receiver() as hook:
        Channel.objects.create(name="mail", kind="email", target="ops@example.com")
        Channel.objects.create(name="json", kind="webhook", target=hook.url + "/json")
        Channel.objects.create(
            name="chat", kind="webhook", target=hook.url + "/slack", format="slack"
        )
        Channel.objects.create(name="ap", kind="apprise", target="json" + hook.url[4:] + "/ap")
        _hold_two_keys(redis_client)
        changes = Evaluator(redis_client).tick()
        assert send_due() == 4
    bodies = {r.path.rsplit("/", 1)[1]: r.json() for r in hook.requests}
    first = Alert.objects.get(rule="key_held", key="order-100")
    client.force_login(viewer)

    page = html.unescape(client.get(f"/alerts/{first.pk}").content.decode())
    listing = html.unescape(client.get("/alerts").content.decode())
    (toast,) = push.message(opened=[a for n in changes.told for a in n.firing])["opened"]
    (message,) = mail.outbox
    webhook, slack, apprise = bodies["json"], bodies["slack"], bodies["ap"]

    held = f"{WHERE}: key order-100 is held behind its dead letter (offset 4)"
    assert held in page
    assert f"{WHERE} / key order-100" in listing and f"{WHERE} / key order-900" in listing
    group = "orders / billing: 2 alerts (queue 0 / key order-100, queue 0 / key order-900)"
    assert toast["summary"] == group
    assert group in message.subject and held in message.body
    assert f"Subject: {WHERE} / key order-100 (offset 4)" in message.body
    assert f"  - queue 0 / key order-900: {WHERE}: key order-900 is held" in message.body
    assert webhook["alert"]["summary"].startswith(held)
    assert group in slack["text"]
    assert group in apprise["title"] and held in apprise["message"]
    mailed = (str(message.subject), str(message.body))
    sent = (webhook["alert"]["summary"], slack["text"], apprise["title"], apprise["message"])
    for text in (page, listing, toast["summary"], *mailed, *sent):
        _assert_no_python(text)
    # The machine fields keep their raw values.
    lead = webhook["alert"]
    assert (lead["topic"], lead["group"], lead["queue"], lead["key"]) == (
        "orders",
        "billing",
        0,
        "order-100",
    )
    assert [(a["queue"], a["key"]) for a in webhook["group"]["alerts"]] == [
        (0, "order-100"),
        (0, "order-900"),
    ]
