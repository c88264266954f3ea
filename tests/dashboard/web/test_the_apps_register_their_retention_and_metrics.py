"""The registries ``web.retention`` and ``web.metrics`` hold what each feature app adds
in its ``AppConfig.ready()``: the retention pass prunes every app's kinds, in
``INSTALLED_APPS`` order, and a scrape shows the alerts' family."""

from __future__ import annotations

from lockstep.dashboard.web.metrics import COLLECTORS, feature_collectors
from lockstep.dashboard.web.retention import PRUNERS


def test_every_apps_kinds_are_pruned_in_installed_apps_order() -> None:
    kinds = [kind for kind, _ in PRUNERS]

    assert kinds == ["events", "samples", "analytics_runs", "alerts", "test_deliveries"]


def test_the_alerts_collector_is_made_afresh_for_each_scrape() -> None:
    assert "alerts" in COLLECTORS
    first, second = feature_collectors(), feature_collectors()

    assert [type(c).__name__ for c in first] == ["AlertsCollector"]
    assert first[0] is not second[0]
