"""Burrow's evaluation of a window of lag samples: stalled when commits stop with lag,
falling behind when lag never decreases while commits advance, fine when the consumer
caught up at any point or lag went down."""

from __future__ import annotations

from lockstep.dashboard.alerts.live import LagSample
from lockstep.dashboard.alerts.rules.lag import trend


def window(*points: tuple[int, int]) -> list[LagSample]:
    return [
        LagSample(at_ms=i * 10_000, committed_offset=c, lag=lag)
        for i, (c, lag) in enumerate(points)
    ]


def test_commits_stopped_with_lag_is_stalled() -> None:
    assert trend(window((40, 5), (40, 9), (40, 12))) == "stalled"


def test_lag_never_decreasing_while_commits_advance_is_falling_behind() -> None:
    assert trend(window((40, 5), (50, 5), (60, 9), (70, 14))) == "falling_behind"


def test_a_window_with_a_drop_or_a_catch_up_is_fine() -> None:
    assert trend(window((40, 5), (50, 9), (60, 7), (70, 14))) is None
    assert trend(window((40, 5), (50, 0), (60, 9))) is None
    assert trend(window((40, 5), (50, 5), (60, 5))) is None  # keeping up, not behind more
    assert trend(window((40, 5))) is None
