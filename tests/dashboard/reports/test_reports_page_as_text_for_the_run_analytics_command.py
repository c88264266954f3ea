"""``report_lines(run)``: the reports page as the few lines ``manage.py run_analytics``
prints after a run: its state, each (topic, group)'s headline figures, the stuck
episodes; or why there is no report."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from lockstep.dashboard.reports.models import AnalyticsRun, GroupDay, StuckEpisode
from lockstep.dashboard.reports.report import report_lines

pytestmark = pytest.mark.django_db

DAY = date(2025, 3, 12)


def run(status: str, **fields: object) -> AnalyticsRun:
    return AnalyticsRun.objects.create(
        day=DAY, status=status, spark_master="local[2]", data_uri="var/analytics", **fields
    )


def test_it_prints_the_headline_of_each_group_and_the_stuck_episodes() -> None:
    done = run("ok", duration_s=95.0, messages_read=12000, events_read=3400, samples_read=8640)
    GroupDay.objects.create(
        run=done,
        topic="orders",
        group="billing",
        time_lag_p99=12.25,
        lag_p99=40,
        seconds_above_threshold=610.0,
        produced=12000,
        consumed=11990,
        retries=12,
        dead_letters=3,
        dead_letter_rate=0.00025,
        stuck_episodes=1,
        owner_changes=4,
        rebalances=1,
    )
    at = datetime(2025, 3, 12, 3, 12, 5, tzinfo=UTC)
    StuckEpisode.objects.create(
        run=done, topic="orders", group="billing", queue=2, level="key", key="poison-1",
        offset=41, started_at=at, ended_at=at + timedelta(seconds=250), last_seen_at=at,
        duration_s=250.0,
        retries=5, max_behind=1200, outcome="dead_lettered",
    )  # fmt: skip

    lines = report_lines(done)

    assert lines == [
        f"Analytics run {done.pk} of 2025-03-12 on local[2]: ok in 1 min 35 s",
        "Read 12,000 messages, 3,400 events and 8,640 lag samples from var/analytics",
        "orders / billing: p99 time lag 12.2 s, p99 lag 40, 10 min 10 s above the lag "
        "threshold; produced 12,000, consumed 11,990; 12 retries, 3 dead letters (0.03%); "
        "1 stuck episode; 4 owner changes, 1 rebalance, 0 fencing rejections",
        "Stuck (key): orders / billing / queue 2 / key poison-1 at offset 41 from "
        "2025-03-12 03:12:05 UTC to 2025-03-12 03:16:15 UTC (4 min 10 s) (5 retries, "
        "1,200 behind): dead lettered",
    ]


def test_it_says_why_there_is_no_report() -> None:
    empty = report_lines(run("empty"))
    failed = report_lines(run("failed", error="Py4JJavaError: boom"))
    queued = report_lines(run("queued"))

    assert "No data for this day: is the beat task write_analytics_data running" in empty[-1]
    assert failed[-1] == "Failed: Py4JJavaError: boom"
    assert queued[-1] == "Now: waiting (0%)"
