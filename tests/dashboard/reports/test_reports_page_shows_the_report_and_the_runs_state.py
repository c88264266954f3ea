"""The reports page, server-rendered: what it says without a report (the command to run,
the beat task that writes the data set), after a run that found no data, when the day's
latest run failed above an earlier report, and how it shows the changes from days that
have no report. The nav links to it."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.reports.models import AnalyticsRun, GroupDay, QueueDay
from tests.dashboard.deadletters.conftest import viewer

__all__ = ["viewer"]

pytestmark = pytest.mark.django_db

DAY = date(2025, 3, 12)


@pytest.fixture
def signed_in(client: Client, viewer: User) -> Client:
    client.force_login(viewer)
    return client


def run_of(day: date, status: str, minutes: int = 0, **fields: object) -> AnalyticsRun:
    started = datetime(2025, 3, 13, 2, 30, tzinfo=UTC) + timedelta(minutes=minutes)
    return AnalyticsRun.objects.create(
        day=day, status=status, started_at=started, spark_master="local[*]", **fields
    )


def page(client: Client, query: str = "") -> str:
    response = client.get(f"/analytics/{query}")
    assert response.status_code == 200
    return response.content.decode()


def test_it_says_how_to_make_the_first_report(signed_in: Client) -> None:
    html = page(signed_in, "?day=2025-03-12")

    assert "No report of 2025-03-12 yet" in html
    assert "python manage.py run_analytics --date 2025-03-12" in html
    assert "write_analytics_data" in html
    assert 'id="headline"' not in html
    assert '<a href="/analytics/" aria-current="page">Analytics</a>' in html


def test_it_says_when_the_run_found_no_data(signed_in: Client) -> None:
    run_of(DAY, AnalyticsRun.Status.EMPTY, data_uri="s3a://bucket/lockstep")

    html = page(signed_in)

    assert "No data on 2025-03-12" in html
    assert "<code>s3a://bucket/lockstep</code>" in html


def test_it_shows_a_failed_run_above_the_report_it_did_not_replace(signed_in: Client) -> None:
    good = run_of(DAY, AnalyticsRun.Status.OK, finished_at=datetime(2025, 3, 13, 2, 33, tzinfo=UTC))
    GroupDay.objects.create(run=good, topic="orders", group="billing", time_lag_p99=12.0)
    QueueDay.objects.create(run=good, topic="orders", group="billing", queue=3)
    failed = run_of(DAY, AnalyticsRun.Status.FAILED, minutes=60, requested_by="ops")
    failed.finish(AnalyticsRun.Status.FAILED, error="AnalysisException: path does not exist")

    html = page(signed_in, "?day=2025-03-12")

    assert f"Run {failed.pk} failed" in html
    assert "AnalysisException: path does not exist" in html
    assert f"The report below is run {good.pk}" in html
    assert f'data-run="{good.pk}"' in html
    assert '<div class="figure-value" data-value="12.0">12 s</div>' in html
    # Neither the day before nor a week before has a report to compare with.
    assert html.count('<span class="no-compare" title="no report of') == 2 * 12
    assert 'tr class="queue-day" data-queue="3"' in html
    assert 'id="lag-chart"' in html and "vendor/uplot/uPlot.iife.min.js" in html


def test_it_shows_a_run_under_way_with_its_progress(signed_in: Client) -> None:
    run = run_of(DAY, AnalyticsRun.Status.RUNNING, stage="transform", progress=35)

    html = page(signed_in, "?day=2025-03-12")

    assert f'data-run-id="{run.pk}"' in html
    assert f'data-state-url="/api/v1/analytics/runs/{run.pk}"' in html
    assert '<progress id="run-progress" max="100" value="35">' in html
    assert '<span class="hint" id="run-stage">transform</span>' in html


def test_it_falls_back_to_the_first_group_with_a_notice(signed_in: Client) -> None:
    run = run_of(DAY, AnalyticsRun.Status.OK)
    GroupDay.objects.create(run=run, topic="orders", group="billing")
    GroupDay.objects.create(run=run, topic="orders", group="mailer")

    html = page(signed_in, "?day=2025-03-12&topic=orders&group=gone")

    assert "orders/gone has no figures on this day: showing orders/billing." in html
    assert html.count('class="pair selected"') == 1
