"""An alert's text shows the figures current when it is shown or sent, or says plainly
that they are those at opening (issue #41: the timeline and the toast said "for 0 s;
0 messages parked" while the alert's page said 42 s and 3 messages). The timeline's
``opened`` event keeps the opening's summary and says "at opening"; a notification,
its toast and the alert's page afterwards tell the figures of the tick it was sent at,
even when only a duration changed since the row was last written. On a hand-built
state in the suite's Redis: key order-100 held behind its dead letter, nothing parked
at first; the group told after a group wait of 2 s."""

from __future__ import annotations

import html
import json
import re
from datetime import timedelta
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from lockstep.dashboard.alerts import lifecycle, push
from lockstep.dashboard.alerts.dispatch import send_due
from lockstep.dashboard.alerts.evaluate import Evaluator
from lockstep.dashboard.alerts.models import Alert, Channel, NotificationGroup
from lockstep.workers import create_topic, keys
from lockstep.workers.inspect import redis_now_ms
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group
from tests.dashboard.alerts.receiver import receiver

pytestmark = pytest.mark.django_db

Q0 = QueueRef("orders", 0)
HELD = "orders / billing / queue 0: key order-100 is held behind its dead letter (offset 4)"
# The hold turns out to have begun this long before the alert opened (its start is read
# again every tick): only the duration changes, which alone does not rewrite the row.
EARLIER_MS = 42_000
FOR_ABOUT_42_S = re.compile(r"for 4\d s; 3 messages parked")


@pytest.fixture(autouse=True)
def told_after_a_group_wait(settings: Any) -> None:
    settings.LOCKSTEP_ALERT_HELD_AFTER_SECONDS = 0
    settings.LOCKSTEP_ALERT_GROUP_WAIT_SECONDS = 60


def _hold(client: redis.Redis, since_ms: int) -> None:
    hold = {"state": "held", "since": since_ms, "offset": 4, "dlq_id": "4-0"}
    client.hset(keys.parked_keys(Q0, "billing"), "order-100", json.dumps(hold))


def _park_three(client: redis.Redis, now: int) -> None:
    client.zadd(
        keys.parked_messages(Q0, "billing", "order-100"),
        {json.dumps({"o": o, "k": "order-100", "t": now}): o for o in (5, 6, 7)},
    )


def _tick_after_the_group_wait(evaluator: Evaluator) -> lifecycle.Changes:
    """The next tick once the group's wait is over (its flush time moved into the past:
    the state the wait stands for, without waiting it out)."""
    NotificationGroup.objects.update(flush_at=timezone.now() - timedelta(hours=1))
    return evaluator.tick()


def test_the_timeline_says_at_opening_and_what_is_told_is_current(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    create_topic(redis_client, "orders", 1)
    register_group(redis_client, "orders", "billing")
    redis_client.set(keys.sequence(Q0), 8)
    redis_client.hset(keys.offset(Q0, "billing"), mapping={"committed": 8, "token": 1})
    now = redis_now_ms(redis_client)
    _hold(redis_client, now)
    evaluator = Evaluator(redis_client)
    with receiver() as hook:
        Channel.objects.create(name="hook", kind="webhook", target=hook.url)

        assert evaluator.tick().opened  # held just now, nothing parked yet
        _park_three(redis_client, now)
        assert not evaluator.tick().told  # still in its group wait
        _hold(redis_client, now - EARLIER_MS)
        changes = _tick_after_the_group_wait(evaluator)
        assert changes.told
        assert send_due() == 1
    alert = Alert.objects.get(rule="key_held")
    (toast,) = push.message(opened=[a for n in changes.told for a in n.firing])["opened"]
    (sent,) = hook.requests
    client.force_login(viewer)
    page = html.unescape(client.get(f"/alerts/{alert.pk}").content.decode())
    summary = page.split('<p class="summary">', 1)[1].split("</p>", 1)[0]
    opened = page.split('data-kind="opened">', 1)[1].split("</tr>", 1)[0]

    assert f"at opening: {HELD} for 0 s; 0 messages parked" in opened
    for told in (toast["summary"], sent.json()["alert"]["summary"], summary):
        assert told.startswith(HELD)
        assert FOR_ABOUT_42_S.search(told), told
    assert 'id="summary-as-of"' in page
