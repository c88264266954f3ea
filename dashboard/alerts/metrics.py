"""The alerts' family on ``GET /metrics`` (registered with ``web.metrics``):
``lockstep_alerts``, the unresolved alerts per built-in rule and state, one query per
scrape. Every rule has both series, at 0 when it has no alert, so a rule that never
fired is still there to alert on."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from lockstep.dashboard.alerts.models import ACKNOWLEDGED, OPEN, Alert
from lockstep.dashboard.alerts.rules import RULES

# The unresolved alert states, each a series per rule.
ALERT_STATES = (OPEN, ACKNOWLEDGED)


class AlertsCollector(Collector):
    """Reads the unresolved alerts when collected."""

    def collect(self) -> Iterator[Metric]:
        yield alert_family(unresolved_alerts())


def unresolved_alerts() -> dict[tuple[str, str], int]:
    """(rule, state) → unresolved alerts."""
    rows = (
        Alert.objects.filter(state__in=ALERT_STATES)
        .values_list("rule", "state")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {(rule, state): n for rule, state, n in rows}


def alert_family(counts: dict[tuple[str, str], int]) -> Metric:
    family = GaugeMetricFamily(
        "lockstep_alerts",
        "Unresolved alerts of the built-in rules, per rule and state (open or acknowledged).",
        labels=("rule", "state"),
    )
    rules = sorted(set(RULES) | {rule for rule, _ in counts})
    for rule in rules:
        for state in ALERT_STATES:
            family.add_metric([rule, state], counts.get((rule, state), 0))
    return family
