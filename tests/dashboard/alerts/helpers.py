"""Helpers for the alert tests: evaluate the rules against the real runtime until an
alert shows up, and measure how long after its threshold it did."""

from __future__ import annotations

import time
from collections.abc import Callable

import redis

from lockstep.dashboard.alerts.evaluate import Evaluator
from lockstep.dashboard.alerts.models import Alert
from lockstep.dashboard.monitor.tasks import sample_lag
from tests.dashboard.scenarios import ingest_all


def evaluate_until(
    client: redis.Redis,
    found: Callable[[], Alert | None],
    timeout: float = 30.0,
    interval: float = 0.1,
    evaluator: Evaluator | None = None,
    sample: bool = False,
) -> Alert:
    """Run evaluator ticks (ingesting events first, as the live ingester would; with
    ``sample``, after taking a lag sample as the ``sample_lag`` beat task would) every
    ``interval`` until ``found`` returns an alert; AssertionError after ``timeout``."""
    evaluator = evaluator or Evaluator(client)
    deadline = time.monotonic() + timeout
    while True:
        if sample:
            sample_lag()
        ingest_all(client)
        evaluator.tick()
        alert = found()
        if alert is not None:
            return alert
        if time.monotonic() > deadline:
            raise AssertionError(
                f"no alert within {timeout} s; alerts: "
                f"{list(Alert.objects.values_list('rule', 'state', 'summary'))}"
            )
        time.sleep(interval)


def unresolved(rule: str) -> Callable[[], Alert | None]:
    def find() -> Alert | None:
        return Alert.objects.filter(rule=rule).exclude(state="resolved").first()

    return find
