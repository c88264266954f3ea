"""Analytics before the first report opens on today (UTC), the day whose data is being
written, not on yesterday; a figure that cannot be compared with the day before or the
week before shows a dash, and one sentence per earlier day says why (no report of that
day, and the command that makes one; or no figures of the group in it)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from lockstep.dashboard.reports.models import AnalyticsRun, GroupDay
from tests.dashboard.deadletters.conftest import viewer

__all__ = ["viewer"]

pytestmark = pytest.mark.django_db

DAY = date(2025, 3, 12)


@pytest.fixture
def signed_in(client: Client, viewer: User) -> Client:
    client.force_login(viewer)
    return client


def _report(day: date) -> AnalyticsRun:
    started = datetime(day.year, day.month, day.day, 3, 0, tzinfo=UTC) + timedelta(days=1)
    return AnalyticsRun.objects.create(
        day=day,
        status=AnalyticsRun.Status.OK,
        started_at=started,
        finished_at=started + timedelta(minutes=2),
        spark_master="local[1]",
    )


def test_before_any_report_the_page_opens_on_today(signed_in: Client) -> None:
    html = signed_in.get("/analytics/").content.decode()

    today = timezone.now().astimezone(UTC).date().isoformat()
    assert f"No report of {today} yet" in html
    assert "<code>make run</code>" in html and "bin/run" not in html


def test_a_missing_comparison_is_a_dash_and_one_sentence_says_why(signed_in: Client) -> None:
    GroupDay.objects.create(run=_report(DAY), topic="orders", group="billing", time_lag_p99=12.0)
    GroupDay.objects.create(run=_report(DAY - timedelta(days=7)), topic="orders", group="mailer")

    html = signed_in.get("/analytics/?day=2025-03-12").content.decode()
    data = signed_in.get("/api/v1/analytics/report?day=2025-03-12").json()

    assert ">no report</dd>" not in html
    assert html.count('<span class="no-compare"') == 2 * 12
    assert data["comparison_notes"] == [
        "No comparison with the day before (2025-03-11): that day has no report. The nightly "
        "run reports each day once it is over; for an earlier day, run python manage.py "
        "run_analytics --date 2025-03-11.",
        "No comparison with the week before (2025-03-05): its report has no figures of "
        "orders/billing.",
    ]
    assert "No comparison with the day before (2025-03-11): that day has no report." in html
