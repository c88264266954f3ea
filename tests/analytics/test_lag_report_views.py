from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from dashboard.reports.models import AnalyticsRun, LagSummary

pytestmark = pytest.mark.django_db


def _run(status: str, hours_ago: float, **fields: object) -> AnalyticsRun:
    started = timezone.now() - timedelta(hours=hours_ago)
    return AnalyticsRun.objects.create(
        started_at=started,
        finished_at=started + timedelta(minutes=1),
        status=status,
        window_start=started - timedelta(hours=24),
        window_end=started,
        spark_master="local[1]",
        **fields,
    )


def _summary(run: AnalyticsRun, queue: int, avg_lag: float | None) -> LagSummary:
    return LagSummary.objects.create(
        run=run,
        topic="orders",
        group="mailer",
        queue=queue,
        samples=5,
        avg_lag=avg_lag,
        max_lag=9,
        p95_lag=8,
        max_time_lag_s=1.25,
        last_committed_offset=77,
        commits=12,
        retries=1,
        dead_letters=0,
        window_start=run.window_start,
        window_end=run.window_end,
    )


def test_it_sends_anonymous_visitors_to_the_login_page(client: Client):
    response = client.get("/analytics/")

    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_its_json_twin_answers_401_to_anonymous_visitors(client: Client):
    response = client.get("/api/v1/analytics/lag")

    assert response.status_code == 401
    assert response.json() == {"error": "authentication required"}


def test_it_says_when_there_is_no_report_yet(viewer_client: Client):
    page = viewer_client.get("/analytics/").content.decode()
    api = viewer_client.get("/api/v1/analytics/lag").json()

    assert "No analytics report yet" in page
    assert api == {"latest_attempt": None, "run": None, "lag_summary": [], "stuck_intervals": []}


def test_it_shows_a_failed_latest_run_above_the_previous_report(viewer_client: Client):
    good = _run("ok", hours_ago=25, events_exported=40)
    _summary(good, queue=3, avg_lag=2.5)
    _run("failed", hours_ago=1, error="PySparkRuntimeError: Java gateway process exited")

    html = viewer_client.get("/analytics/").content.decode()

    assert "failed: PySparkRuntimeError: Java gateway process exited" in html
    assert f'data-run="{good.pk}"' in html
    assert 'data-queue="3"' in html and '<td class="avg-lag">2.5</td>' in html


def test_its_json_twin_returns_the_latest_report(viewer_client: Client):
    old = _run("ok", hours_ago=49)
    _summary(old, queue=0, avg_lag=100.0)
    latest = _run("ok", hours_ago=1, events_exported=10)
    _summary(latest, queue=1, avg_lag=None)

    body = viewer_client.get("/api/v1/analytics/lag").json()

    assert body["run"]["id"] == latest.pk == body["latest_attempt"]["id"]
    assert [
        (s["queue"], s["avg_lag"], s["p95_lag"], s["last_committed_offset"])
        for s in body["lag_summary"]
    ] == [(1, None, 8, 77)]
