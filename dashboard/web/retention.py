"""Retention across the feature apps (``registry.Registry``): each app registers a
pruner per kind of rows it keeps for a bounded time, and the hourly task prunes them all
without importing the apps (the ``*_RETENTION_DAYS`` variables of
docs/configuration.md).

A pruner deletes the rows of its kind older than that kind's setting, measured from
``now``, and returns how many rows of that kind it deleted (rows removed with them by a
cascade are not counted).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from lockstep.dashboard.web.registry import Registry

log = logging.getLogger(__name__)

Pruner = Callable[[datetime], int]

PRUNERS: Registry[Pruner] = Registry("pruner")


def prune_all(now: datetime) -> dict[str, int]:
    """Every kind pruned in turn (registration order); how many rows of each were
    deleted."""
    deleted = {kind: prune(now) for kind, prune in PRUNERS}
    if any(deleted.values()):
        log.info("retention pruned %s", ", ".join(f"{n} {k}" for k, n in deleted.items()))
    return deleted
