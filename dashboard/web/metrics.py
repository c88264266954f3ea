"""Metric families a feature app adds to ``GET /metrics`` (``registry.Registry``).

Each scrape makes one collector from every registered factory, in registration order,
after the monitor's own families. A collector reads what it shows when the scrape
collects it.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client.registry import Collector

from lockstep.dashboard.web.registry import Registry

CollectorFactory = Callable[[], Collector]

COLLECTORS: Registry[CollectorFactory] = Registry("metrics collector")


def feature_collectors() -> list[Collector]:
    """One fresh collector per registered factory, in registration order."""
    return [factory() for _, factory in COLLECTORS]
