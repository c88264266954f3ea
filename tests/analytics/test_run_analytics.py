from __future__ import annotations

from datetime import datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from pyspark.sql import SparkSession

from dashboard.monitor.models import Event
from dashboard.reports import tasks
from dashboard.reports.models import AnalyticsRun, LagSummary, StuckInterval

pytestmark = pytest.mark.django_db


class Log:
    """Writes Event rows as the ingester would store them."""

    def __init__(self, start: datetime) -> None:
        self.start = start
        self.n = 0

    def add(
        self,
        type_: str,
        at_s: float,
        details: Any = None,
        queue: int | None = 0,
        group: str = "mailer",
    ) -> None:
        self.n += 1
        Event.objects.create(
            stream_id=f"{self.n}-0",
            type=type_,
            queue=queue,
            group=group,
            topic="orders",
            ts=self.start + timedelta(seconds=at_s),
            details={} if details is None else details,
        )

    def sample(
        self, at_s: float, lag: int, committed: int, time_lag_s: float, queue: int = 0
    ) -> None:
        self.add(
            "lag_sampled",
            at_s,
            {
                "max_offset": committed + lag,
                "lag": lag,
                "committed_offset": committed,
                "time_lag_s": time_lag_s,
                "owner": "w1",
            },
            queue,
        )


def _run(**options: Any) -> str:
    out = StringIO()
    call_command("run_analytics", master="local[1]", stdout=out, **options)
    return out.getvalue()


def test_it_stores_the_lag_summary_and_shows_it_on_the_report_page(
    spark: SparkSession, viewer_client: Client
):
    log = Log(timezone.now() - timedelta(hours=1))
    log.sample(0, lag=4, committed=10, time_lag_s=0.5)
    log.add("consume_failed", 5, {"offsets": [10], "reconsume_times": 1, "error": "boom"})
    log.add("consume_failed", 8, {"offsets": [10], "reconsume_times": 2, "error": "boom"})
    log.sample(10, lag=8, committed=10, time_lag_s=2.0)
    log.add("dead_lettered", 12, {"offset": 10, "error": "boom"})
    log.add("offset_committed", 15, {"from_offset": 11, "offset": 18, "commits": 8})
    log.sample(20, lag=0, committed=18, time_lag_s=0.0)
    log.add("lock_acquired", 1, queue=0)
    for at_s, lag in ((0, 5), (60, 6), (120, 7)):
        log.sample(at_s, lag=lag, committed=40, time_lag_s=lag * 1.0, queue=2)
    log.start = timezone.now() - timedelta(hours=30)  # outside the default 24 h window
    log.sample(0, lag=1000, committed=0, time_lag_s=99.0)

    output = _run()

    run = AnalyticsRun.objects.get()
    assert (run.status, run.events_exported, run.events_malformed) == ("ok", 11, 0)
    assert run.spark_master == "local[1]"
    q0 = LagSummary.objects.get(run=run, queue=0)
    assert (q0.topic, q0.group, q0.samples, q0.avg_lag, q0.p95_lag, q0.max_lag) == (
        "orders",
        "mailer",
        3,
        4.0,
        8,
        8,
    )
    assert (
        q0.max_time_lag_s,
        q0.last_committed_offset,
        q0.commits,
        q0.retries,
        q0.dead_letters,
    ) == (2.0, 18, 8, 2, 1)
    assert q0.window_end - q0.window_start == timedelta(seconds=20)
    assert list(LagSummary.objects.filter(run=run).values_list("queue", flat=True)) == [0, 2]
    stuck = StuckInterval.objects.get(run=run)
    assert (stuck.queue, stuck.committed_offset, stuck.duration_s, stuck.ongoing) == (
        2,
        40,
        120.0,
        True,
    )
    assert "Analytics run" in output and "orders/mailer/0" in output
    assert "Stuck: orders/mailer/2 at offset 40 for 120 s" in output

    page = viewer_client.get("/analytics/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-topic="orders" data-group="mailer" data-queue="0"' in html
    assert '<td class="avg-lag">4.0</td>' in html
    assert '<td class="retries">2</td><td class="dead-letters">1</td>' in html
    assert "still stuck at the last sample" in html


def test_it_says_clearly_when_the_window_has_no_events(viewer_client: Client, analytics_dir: Path):
    output = _run(since_hours=6)

    run = AnalyticsRun.objects.get()
    assert (run.status, run.events_exported, run.finished_at is not None) == ("empty", 0, True)
    assert "No events in this window: nothing to analyse" in output
    assert list(analytics_dir.iterdir()) == []
    assert "No events in this window" in viewer_client.get("/analytics/").content.decode()


def test_it_skips_malformed_details_and_says_how_many(spark: SparkSession, viewer_client: Client):
    log = Log(timezone.now() - timedelta(minutes=30))
    log.sample(0, lag=3, committed=5, time_lag_s=1.0)
    log.add("lag_sampled", 10, {"lag": "a lot"})
    log.add("offset_committed", 20, ["not", "an", "object"])

    output = _run()

    run = AnalyticsRun.objects.get()
    assert (run.status, run.events_exported, run.events_malformed) == ("ok", 3, 2)
    assert [e["problem"] for e in run.malformed_examples] == [
        "lag_sampled details without an integer lag",
        "offset_committed details without integer offset and commits",
    ]
    assert LagSummary.objects.get(run=run).samples == 1
    assert "2 malformed events skipped" in output
    assert "2 malformed events skipped" in viewer_client.get("/analytics/").content.decode()


def test_it_records_a_failed_run_and_says_why(settings: Any, tmp_path: Path):
    Event.objects.create(stream_id="1-0", type="lag_sampled", ts=timezone.now(), details={"lag": 1})
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    settings.LOCKSTEP_ANALYTICS_DIR = blocker / "analytics"  # cannot create a dir in a file

    with pytest.raises(CommandError, match=r"failed: NotADirectoryError: .*Not a directory"):
        _run(since_hours=1)

    run = AnalyticsRun.objects.get()
    assert run.status == "failed"
    assert run.error.startswith("NotADirectoryError: [Errno 20] Not a directory")
    assert run.finished_at is not None


def test_it_rejects_a_window_that_is_not_positive():
    with pytest.raises(CommandError, match="--since-hours must be positive"):
        _run(since_hours=0)
    assert not AnalyticsRun.objects.exists()


def test_the_nightly_task_runs_the_same_analysis(spark: SparkSession):
    Log(timezone.now() - timedelta(minutes=5)).sample(0, lag=2, committed=1, time_lag_s=0.1)

    result = tasks.run_analytics()

    run = AnalyticsRun.objects.get()
    assert result["id"] == run.pk and result["status"] == "ok"
    # settings.SPARK_MASTER is local[*]; the suite's active local[1] session was reused.
    assert run.spark_master == "local[1]"
    assert LagSummary.objects.get(run=run).max_lag == 2
