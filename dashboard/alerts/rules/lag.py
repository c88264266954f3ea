"""Rules over lag: ``lag_high`` (time lag above a threshold) and ``lag_trend`` (Burrow's
sliding-window evaluation over the stored lag samples)."""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING

from django.conf import settings

from lockstep.dashboard.alerts.rules.base import CRITICAL, WARNING, Finding, Param, ParamsFor, Rule
from lockstep.dashboard.alerts.text import duration, queue_subject

if TYPE_CHECKING:
    from lockstep.dashboard.alerts.live import LagSample, LiveState


class LagHigh(Rule):
    """The oldest unconsumed (or parked) message of a queue was produced more than
    ``time_lag_s`` ago."""

    name = "lag_high"
    description = "A queue's time lag is above its threshold."
    params = (Param("time_lag_s", "Time lag above (s)", "LOCKSTEP_ALERT_LAG_SECONDS", 1.0),)

    def evaluate(self, live: LiveState, params_for: ParamsFor) -> list[Finding]:
        out = []
        for at, g in live.queue_groups():
            p = params_for(self.name, at.topic, at.group)
            if p is None or g["time_lag_s"] <= p["time_lag_s"]:
                continue
            out.append(
                Finding(
                    rule=self.name,
                    severity=WARNING,
                    topic=at.topic,
                    group=at.group,
                    queue=at.queue,
                    offset=g["committed_offset"],
                    # The oldest waiting message was produced then: the lag began there.
                    since_ms=int(live.now_ms - g["time_lag_s"] * 1000),
                    summary=f"{queue_subject(at)}: time lag "
                    f"{duration(g['time_lag_s'])} (threshold {duration(p['time_lag_s'])}), "
                    f"{g['lag']} messages behind",
                    details={"time_lag_s": g["time_lag_s"], "lag": g["lag"]},
                )
            )
        return out


def trend(samples: list[LagSample]) -> str | None:
    """Burrow's evaluation of a window of samples (oldest first), or ``None`` when fine:
    ``stalled`` when lag stayed above zero and the committed offset never moved;
    ``falling_behind`` when the committed offset advanced but lag never decreased and
    grew overall. Any sample at zero lag means the consumer caught up: fine."""
    if len(samples) < 2 or any(s.lag <= 0 for s in samples):
        return None
    first, last = samples[0], samples[-1]
    if all(s.committed_offset == first.committed_offset for s in samples):
        return "stalled"
    never_down = all(b.lag >= a.lag for a, b in pairwise(samples))
    if never_down and last.lag > first.lag and last.committed_offset > first.committed_offset:
        return "falling_behind"
    return None


class LagTrend(Rule):
    """Over the last ``samples`` lag samples of a queue (``LOCKSTEP_LAG_SAMPLE_SECONDS``
    apart): commits stopped (``stalled``, critical) or lag never decreasing while commits
    advance (``falling_behind``, warning)."""

    name = "lag_trend"
    description = "Over the last lag samples, commits stopped or lag kept growing."
    params = (Param("samples", "Samples", "LOCKSTEP_ALERT_LAG_TREND_SAMPLES", 3.0, integer=True),)

    def evaluate(self, live: LiveState, params_for: ParamsFor) -> list[Finding]:
        wanted = {
            (at.topic, at.group): int(p["samples"])
            for at, _ in live.queue_groups()
            if (p := params_for(self.name, at.topic, at.group)) is not None
        }
        if not wanted:
            return []
        interval_s = float(settings.LOCKSTEP_LAG_SAMPLE_SECONDS)
        # One more interval than the window, so a late sample does not shorten it.
        history = live.lag_samples((max(wanted.values()) + 1) * interval_s)
        out = []
        for at, _g in live.queue_groups():
            k = wanted.get((at.topic, at.group))
            window = history.get(at, [])[-k:] if k else []
            if k is None or len(window) < k:
                continue
            status = trend(window)
            if status is None:
                continue
            first, last = window[0], window[-1]
            span_s = (last.at_ms - first.at_ms) / 1000
            summary = (
                f"{queue_subject(at)}: commits stalled at offset "
                f"{last.committed_offset} over the last {k} lag samples ({duration(span_s)}), "
                f"lag {last.lag}"
                if status == "stalled"
                else f"{queue_subject(at)}: falling behind, lag grew from "
                f"{first.lag} to {last.lag} over the last {k} samples ({duration(span_s)}) "
                "while commits advanced"
            )
            out.append(
                Finding(
                    rule=self.name,
                    severity=CRITICAL if status == "stalled" else WARNING,
                    topic=at.topic,
                    group=at.group,
                    queue=at.queue,
                    offset=last.committed_offset,
                    since_ms=first.at_ms,
                    summary=summary,
                    details={
                        "status": status,
                        "samples": [[s.at_ms, s.committed_offset, s.lag] for s in window],
                    },
                )
            )
        return out
