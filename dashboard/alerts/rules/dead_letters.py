"""``dlq_growth``: dead letters arriving faster than a threshold."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockstep.dashboard.alerts.rules.base import WARNING, Finding, Param, ParamsFor, Rule
from lockstep.dashboard.alerts.text import duration, subject

if TYPE_CHECKING:
    from lockstep.dashboard.alerts.live import LiveState


class DlqGrowth(Rule):
    """More than ``count`` new dead letters (and malformed entries) of a group within
    ``window_s``. ``since`` is when that first held (the arrival of the dead letter that
    passed the threshold), never the start of the window."""

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
                times = live.dead_letter_times(p["window_s"]).get((t["name"], group), [])
                if len(times) <= p["count"]:
                    continue
                out.append(self._finding(live, t["name"], group, times, p))
        return out

    def _finding(
        self, live: LiveState, topic: str, group: str, times: list[int], p: dict[str, float]
    ) -> Finding:
        # The condition has held without a break at least since the dead letter that
        # made the count pass the threshold: from then to now those count + 1 all lie
        # within one window. The tracker keeps that start while the condition lasts.
        crossed = times[int(p["count"])]
        since = live.tracker.since(
            f"{self.name}|{topic}|{group}", True, live.now_ms, lambda: crossed
        )
        n = len(times)
        return Finding(
            rule=self.name,
            severity=WARNING,
            topic=topic,
            group=group,
            since_ms=since,
            summary=f"{subject(topic, group)}: {n} new dead letters in the last "
            f"{duration(p['window_s'])} (threshold {int(p['count'])})",
            details={
                "new_dead_letters": n,
                "threshold": int(p["count"]),
                "window_s": p["window_s"],
            },
        )
