"""The alert evaluator starts a tick every interval while ticks are short; a tick that
overran the interval (a large fleet on a busy machine) is followed by a rest twice as
long, so evaluation takes at most a third of the evaluator's time instead of running tick
after tick (docs/alerts.md, detection delay)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lockstep.dashboard.alerts.evaluate import next_wait

INTERVALS = st.floats(min_value=0.2, max_value=60.0)
TOOK = st.floats(min_value=0.0, max_value=600.0)


@given(interval=INTERVALS, share=st.floats(min_value=0.0, max_value=0.999))
def test_a_short_tick_waits_out_the_rest_of_the_interval(interval: float, share: float) -> None:
    took = interval * share

    assert abs((took + next_wait(interval, took)) - interval) < 1e-9


@given(interval=INTERVALS, took=TOOK)
def test_evaluation_never_takes_more_than_a_third_of_the_time_once_a_tick_overran(
    interval: float, took: float
) -> None:
    wait = next_wait(interval, took)

    assert wait >= 0
    if took >= interval:
        assert took / (took + wait) <= 1 / 3 + 1e-9
