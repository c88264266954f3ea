"""The built-in rules, by name (docs/alerts.md). A new rule is a ``Rule`` subclass in its
own module, listed here."""

from __future__ import annotations

from lockstep.dashboard.alerts.rules.base import (
    CRITICAL,
    WARNING,
    Finding,
    Param,
    ParamsFor,
    Resolution,
    Rule,
)
from lockstep.dashboard.alerts.rules.consumers import ConsumerLost, LockFlapping
from lockstep.dashboard.alerts.rules.dead_letters import DlqGrowth
from lockstep.dashboard.alerts.rules.lag import LagHigh, LagTrend
from lockstep.dashboard.alerts.rules.queues import KeyHeld, MessageBlocked, QueueStuck, QueueUnowned

RULES: dict[str, Rule] = {
    r.name: r
    for r in (
        QueueStuck(),
        MessageBlocked(),
        KeyHeld(),
        QueueUnowned(),
        ConsumerLost(),
        LockFlapping(),
        LagHigh(),
        LagTrend(),
        DlqGrowth(),
    )
}

__all__ = ["CRITICAL", "RULES", "WARNING", "Finding", "Param", "ParamsFor", "Resolution", "Rule"]
