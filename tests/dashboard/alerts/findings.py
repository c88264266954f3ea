"""Findings built by hand, for lifecycle tests that drive ``lifecycle.apply`` directly
(the rules' own tests drive the real runtime)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from lockstep.dashboard.alerts.models import Channel
from lockstep.dashboard.alerts.rules import CRITICAL, Finding

T0 = timezone.now().replace(microsecond=0)


def stuck(queue: int = 3, topic: str = "orders", group: str = "billing") -> Finding:
    return Finding(
        rule="queue_stuck",
        severity=CRITICAL,
        summary=f"{topic} / {group} / queue {queue} is stuck",
        since_ms=int((T0 - timedelta(minutes=2)).timestamp() * 1000),
        topic=topic,
        group=group,
        queue=queue,
        offset=41,
        details={"lag": 7},
    )


def later(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def webhook_channel(name: str = "ops") -> Channel:
    return Channel.objects.create(name=name, kind="webhook", target="http://127.0.0.1:9/hook")
