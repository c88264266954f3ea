"""``dlq_growth``: dead letters arriving faster than a threshold."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockstep.dashboard.alerts.rules.base import WARNING, Finding, Param, ParamsFor, Rule
from lockstep.dashboard.alerts.text import duration

if TYPE_CHECKING:
    from lockstep.dashboard.alerts.live import LiveState


class DlqGrowth(Rule):
    """More than ``count`` new dead letters (and malformed entries) of a group within
    ``window_s``."""

    name = "dlq_growth"
    description = "Dead letters are arriving fast."
    params = (
        Param("count", "More than (dead letters)", "LOCKSTEP_ALERT_DLQ_GROWTH", 0.0, integer=True),
        Param("window_s", "Within (s)", "LOCKSTEP_ALERT_DLQ_WINDOW_SECONDS", 10.0),
    )

    def evaluate(self, live: LiveState, params_for: ParamsFor) -> list[Finding]:
        out = []
        for t in live.topics:
            for group in t["groups"]:
                p = params_for(self.name, t["name"], group)
                if p is None:
                    continue
                n = live.dead_letters(p["window_s"]).get((t["name"], group, -1), 0)
                if n <= p["count"]:
                    continue
                out.append(
                    Finding(
                        rule=self.name,
                        severity=WARNING,
                        topic=t["name"],
                        group=group,
                        since_ms=int(live.now_ms - p["window_s"] * 1000),
                        summary=f"{t['name']}/{group}: {n} new dead letters in the last "
                        f"{duration(p['window_s'])} (threshold {int(p['count'])})",
                        details={"new_dead_letters": n, "window_s": p["window_s"]},
                    )
                )
        return out
