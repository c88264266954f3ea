"""Every consumer of a group dies (two real ``lockstep consume`` processes, SIGKILL) while
each of its 24 queues has a backlog: 24 ``queue_unowned`` alerts open, one per queue,
but the operator is told once for the group: one webhook POST and one mail, naming the
group, the count and the first queues; one toast over the alerts socket's channel group;
and the alerts page shows one row for the group, expandable to its alerts
(docs/alerts-delivery.md, "Grouping"). (The two ``consumer_lost`` alerts are a group of
their own; their cards expire two heartbeat timeouts after the kill, which may resolve
them within their group wait, and an alert resolved before its group was told is never
notified: the test allows one notification of theirs or none.)"""

from __future__ import annotations

import asyncio
import re
import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client

from lockstep.dashboard.alerts import push
from lockstep.dashboard.alerts.dispatch import send_due
from lockstep.dashboard.alerts.evaluate import Evaluator
from lockstep.dashboard.alerts.models import Alert, Channel, Delivery
from lockstep.workers import create_topic
from lockstep.workers.hashing import queue_for_key
from lockstep.workers.inspect import queue_state
from lockstep.workers.refs import QueueRef
from tests.dashboard.alerts.helpers import evaluate_until
from tests.dashboard.alerts.receiver import Receiver, receiver
from tests.dashboard.helpers import produce
from tests.support import probe_until, wait_until
from tests.workers.harness import ConsumerProcess

pytestmark = [pytest.mark.django_db(transaction=True)]

QUEUES = 24
CONSUMERS = ("c-doomed-1", "c-doomed-2")
# Long enough for every queue of the dead group to join before the first notification
# (they all open within a tick or two of the heartbeat timeout), short for a test.
GROUP_WAIT_S = 4.0
TIMINGS = {
    "LOCKSTEP_HEARTBEAT_INTERVAL": "0.3",
    "LOCKSTEP_HEARTBEAT_TIMEOUT": "2.0",
    "LOCKSTEP_LOCK_TTL": "60",
    "LOCKSTEP_CLIENT_LOCK_EXPIRY": "30",
    "LOCKSTEP_LOCK_RENEW_INTERVAL": "2",
}


@pytest.fixture
def consumers(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[ConsumerProcess]]:
    for name, value in TIMINGS.items():
        monkeypatch.setenv(name, value)
    create_topic(redis_client, "orders", QUEUES)
    procs = [
        ConsumerProcess(redis_url, "orders", "mailer", c, tmp_path, env=TIMINGS).start()
        for c in CONSUMERS
    ]
    yield procs
    for proc in procs:
        proc.kill()


def _owners(client: redis.Redis) -> list[str | None]:
    out = []
    for q in range(QUEUES):
        groups = queue_state(client, QueueRef("orders", q))["groups"]
        out.append(groups[0]["owner"] if groups else None)
    return out


def _one_key_per_queue() -> list[str]:
    keys: dict[int, str] = {}
    n = 0
    while len(keys) < QUEUES:
        keys.setdefault(queue_for_key(f"order-{n}", QUEUES), f"order-{n}")
        n += 1
    return [keys[q] for q in range(QUEUES)]


def _told(rule: str) -> list[Delivery]:
    return list(Delivery.objects.filter(alert__rule=rule))


def _listen() -> tuple[Any, str]:
    """A channel in the alerts socket's channel group: it receives what every page's
    socket would."""
    layer = get_channel_layer()
    name = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(push.ALERTS_GROUP, name)
    return layer, name


def _received(layer: Any, name: str) -> list[dict[str, Any]]:
    """Every push waiting on the channel (it stops at the first 0.5 s of silence)."""

    async def drain() -> list[dict[str, Any]]:
        out = []
        while True:
            try:
                out.append(await asyncio.wait_for(layer.receive(name), 0.5))
            except TimeoutError:
                return out

    return async_to_sync(drain)()


def _storm(
    redis_url: str, client: redis.Redis, procs: list[ConsumerProcess], hook: Receiver
) -> None:
    """Kill the whole group with a backlog on every queue; evaluate until both groups'
    notifications are queued, then send them."""
    probe_until(
        lambda: _owners(client),
        lambda owners: set(owners) <= set(CONSUMERS) and len(set(owners)) == 2,
        timeout=60,
    )
    evaluator = Evaluator(client)
    evaluator.tick()
    for proc in procs:
        proc.signal(signal.SIGKILL)
    for proc in procs:
        proc.kill()
    produce(redis_url, "orders", _one_key_per_queue())
    evaluate_until(
        client,
        lambda: Alert.objects.first() if _told("queue_unowned") else None,
        timeout=40,
        interval=0.2,
        evaluator=evaluator,
    )
    wait_until(lambda: send_due() == 0 and hook.requests, 20, "the notifications sent")


def test_it_tells_each_channel_once_per_group_naming_the_group_and_the_count(
    redis_url: str,
    redis_client: redis.Redis,
    consumers: list[ConsumerProcess],
    settings: Any,
    client: Client,
    django_user_model: type[User],
) -> None:
    settings.LOCKSTEP_ALERT_CONSUMER_LOST_SECONDS = 0
    settings.LOCKSTEP_ALERT_UNOWNED_AFTER_SECONDS = 1.0
    settings.LOCKSTEP_STUCK_AFTER_SECONDS = 600  # not within this test: its own notice
    settings.LOCKSTEP_ALERT_GROUP_WAIT_SECONDS = GROUP_WAIT_S
    settings.LOCKSTEP_ALERT_GROUP_INTERVAL_SECONDS = 300
    layer, channel = _listen()
    with receiver() as hook:
        Channel.objects.create(name="ops-hook", kind="webhook", target=hook.url)
        Channel.objects.create(name="ops-mail", kind="email", target="ops@example.com")
        _storm(redis_url, redis_client, consumers, hook)

    unowned = Alert.objects.filter(rule="queue_unowned")
    assert set(unowned.values_list("queue", flat=True)) == set(range(QUEUES))
    assert Alert.objects.filter(rule="consumer_lost").count() == 2

    # One POST for the group to the webhook, the group's every alert in it.
    bodies = [r.json() for r in hook.requests]
    told = Counter(b["alert"]["rule"] for b in bodies)
    assert told["queue_unowned"] == 1 and told["consumer_lost"] <= 1 and len(told) <= 2
    (storm,) = [b for b in bodies if b["alert"]["rule"] == "queue_unowned"]
    group = storm["group"]
    assert (storm["event"], group["topic"], group["group"]) == ("opened", "orders", "mailer")
    assert (group["count"], group["more"]) == (QUEUES, QUEUES - 10)
    assert [a["queue"] for a in group["alerts"]] == list(range(10))

    # One mail for the group, its subject naming the group and the count.
    (message,) = [m for m in mail.outbox if "queue_unowned" in m.subject]
    assert message.subject == (
        "[ALERT] queue_unowned (critical): orders / mailer: 24 alerts "
        "(queues 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 14 more)"
    )
    assert "… and 14 more" in message.body
    assert len(mail.outbox) == len(bodies)

    # One toast for the group on every page.
    toasts = [t for m in _received(layer, channel) for t in m["opened"]]
    (toast,) = [t for t in toasts if t["rule"] == "queue_unowned"]
    assert toast["count"] == QUEUES
    assert toast["summary"].startswith("orders / mailer: 24 alerts (queues 0, 1, 2,")

    # The alerts page: one row for the group, its alerts behind a <details>.
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-12345"))
    response = client.get("/alerts?rule=queue_unowned")
    rows = [(g.rule, g.topic, g.group, g.total) for g in response.context["data"]["groups"]]
    assert rows == [("queue_unowned", "orders", "mailer", QUEUES)]
    html = response.content.decode()
    assert html.count('class="alert-group-row"') == 1
    storm_row = html[html.index('data-rule="queue_unowned"') :]
    storm_row = storm_row[: storm_row.index("</details>")]
    assert "24 alerts</strong>: queues 0, 1, 2, 3, 4, 5, 6, 7, 8, 9…" in storm_row
    assert len(re.findall(r'class="alert-row" data-alert-id', storm_row)) == QUEUES
