"""GET /metrics: ``lockstep_alerts`` counts unresolved alerts per rule and state, with a 0
series for every built-in rule in each state from the start."""

from __future__ import annotations

from itertools import count

import pytest
from django.test import Client
from django.utils import timezone

from lockstep.dashboard.alerts.models import ACKNOWLEDGED, CRITICAL, OPEN, RESOLVED, WARNING, Alert
from lockstep.dashboard.alerts.rules import RULES
from tests.dashboard.test_metrics_endpoint import parse

pytestmark = pytest.mark.django_db

_fingerprints = count()


def _alert(rule: str, state: str, severity: str = CRITICAL) -> Alert:
    return Alert.objects.create(
        rule=rule,
        fingerprint=f"{rule}|orders|mailer|{next(_fingerprints)}",
        severity=severity,
        state=state,
        topic="orders",
        group="mailer",
        summary="constructed",
        since=timezone.now(),
    )


def _alerts_gauge(client: Client) -> dict[tuple[str, str], float]:
    family = parse(client.get("/metrics").content.decode())["lockstep_alerts"]
    assert family.type == "gauge"
    return {(dict(k)["rule"], dict(k)["state"]): v for k, v in family.samples.items()}


def test_it_shows_every_rule_at_zero_without_alerts(client: Client) -> None:
    gauge = _alerts_gauge(client)

    assert gauge == {(rule, state): 0 for rule in RULES for state in (OPEN, ACKNOWLEDGED)}


def test_it_counts_open_and_acknowledged_alerts_but_not_resolved_ones(client: Client) -> None:
    _alert("queue_stuck", OPEN)
    _alert("queue_stuck", OPEN)
    _alert("queue_stuck", ACKNOWLEDGED)
    _alert("queue_stuck", RESOLVED)
    _alert("key_held", ACKNOWLEDGED, severity=WARNING)

    gauge = _alerts_gauge(client)

    assert gauge[("queue_stuck", OPEN)] == 2
    assert gauge[("queue_stuck", ACKNOWLEDGED)] == 1
    assert gauge[("key_held", ACKNOWLEDGED)] == 1
    assert gauge[("key_held", OPEN)] == 0
    assert sum(gauge.values()) == 4
