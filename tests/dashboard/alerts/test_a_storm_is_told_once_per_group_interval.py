"""Alertmanager's three intervals on one (rule, topic, group), driven through
``lifecycle.apply`` at chosen times: the group wait gathers a storm into its first
notification, the group interval spaces out what changes after it (new alerts,
resolutions), the repeat interval tells what still fires again, and a group whose alerts
all resolved starts over with a group wait (docs/alerts-delivery.md, "Grouping")."""

from __future__ import annotations

from typing import Any

import pytest

from lockstep.dashboard.alerts import lifecycle
from lockstep.dashboard.alerts.models import Delivery, NotificationGroup
from tests.dashboard.alerts.findings import later, stuck, webhook_channel

pytestmark = pytest.mark.django_db

ALL = {"queue_stuck"}


@pytest.fixture(autouse=True)
def intervals(settings: Any) -> None:
    settings.LOCKSTEP_ALERT_GROUP_WAIT_SECONDS = 30
    settings.LOCKSTEP_ALERT_GROUP_INTERVAL_SECONDS = 300
    settings.LOCKSTEP_ALERT_RENOTIFY_SECONDS = 3600


def told() -> list[tuple[str, int, int]]:
    """Each notification queued: (event, firing count, resolved count)."""
    return [
        (d.event, d.payload["group"]["count"], d.payload["group"]["resolved_count"])
        for d in Delivery.objects.order_by("id")
    ]


def test_it_gathers_a_storm_into_one_notification_after_the_group_wait() -> None:
    webhook_channel()
    for t in range(0, 30, 2):  # the storm grows: 2 more queues every tick
        assert lifecycle.apply([stuck(q) for q in range(t + 2)], ALL, later(t)).told == []
    assert told() == []

    changes = lifecycle.apply([stuck(q) for q in range(32)], ALL, later(30))

    assert told() == [("opened", 32, 0)]
    (notice,) = changes.told
    assert [a.queue for a in notice.firing] == list(range(32))
    body = Delivery.objects.get().payload
    assert [a["queue"] for a in body["group"]["alerts"]] == list(range(10))
    assert body["group"]["more"] == 22


def test_it_tells_what_changed_only_after_the_group_interval() -> None:
    webhook_channel()
    lifecycle.apply([stuck(q) for q in range(5)], ALL, later(0))
    lifecycle.apply([stuck(q) for q in range(5)], ALL, later(30))
    for t in (40, 100, 329):  # a sixth queue joins, then the first two recover
        lifecycle.apply([stuck(q) for q in range(2, 6)], ALL, later(t))
    assert told() == [("opened", 5, 0)]

    lifecycle.apply([stuck(q) for q in range(2, 6)], ALL, later(330))

    assert told() == [("opened", 5, 0), ("opened", 4, 2)]


def test_it_repeats_what_still_fires_after_the_repeat_interval(settings: Any) -> None:
    settings.LOCKSTEP_ALERT_RENOTIFY_SECONDS = 600
    webhook_channel()
    for t in (0, 30, 400, 629):
        lifecycle.apply([stuck(q) for q in range(3)], ALL, later(t))
    assert told() == [("opened", 3, 0)]

    lifecycle.apply([stuck(q) for q in range(3)], ALL, later(631))

    assert told() == [("opened", 3, 0), ("renotify", 3, 0)]


def test_a_group_that_resolved_waits_the_group_wait_again() -> None:
    webhook_channel()
    lifecycle.apply([stuck(q) for q in range(3)], ALL, later(0))
    lifecycle.apply([stuck(q) for q in range(3)], ALL, later(30))
    lifecycle.apply([], ALL, later(40))
    lifecycle.apply([], ALL, later(330))  # the resolutions, one notification
    assert told() == [("opened", 3, 0), ("resolved", 0, 3)]
    assert not NotificationGroup.objects.exists()

    lifecycle.apply([stuck(7)], ALL, later(400))
    lifecycle.apply([stuck(7)], ALL, later(429))
    assert len(told()) == 2
    lifecycle.apply([stuck(7)], ALL, later(430))
    assert told()[-1] == ("opened", 1, 0)
