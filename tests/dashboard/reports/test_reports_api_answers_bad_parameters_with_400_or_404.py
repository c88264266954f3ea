"""The reports page and its JSON views answer a malformed day, a day out of range, an
unknown run, and NUL characters with 400 / 404 saying what was wrong: JSON under
/api/, the error page elsewhere; never a 500."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from tests.dashboard.deadletters.conftest import viewer

__all__ = ["viewer"]

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(client: Client, viewer: User) -> Client:
    client.force_login(viewer)
    return client


def tomorrow() -> str:
    return (timezone.now().date() + timedelta(days=1)).isoformat()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("day=2025-02-30", "day '2025-02-30' is not a date of the calendar"),
        ("day=99999-01-01", "day must be a date as YYYY-MM-DD"),
        ("day=2025-3-1", "day must be a date as YYYY-MM-DD"),
        ("day=20250301", "day must be a date as YYYY-MM-DD"),
        ("day=%EF%BC%92025-03-01", "day must be a date as YYYY-MM-DD"),  # a full-width digit
        ("day=0001-01-01", "day must be from 2000-01-01 to today"),
        ("day=9999-12-31", "day must be from 2000-01-01 to today"),
        ("day=2025-03-01%00", "day must not contain NUL characters"),
        ("day=" + "1" * 100, "day is longer than 64 characters"),
        ("day=2025-03-01&topic=or%00ders", "topic must not contain NUL characters"),
        ("day=2025-03-01&group=%00", "group must not contain NUL characters"),
        ("day=2025-03-01&queue=-1", "queue must be 0..1023"),
        ("day=2025-03-01&queue=1e3", "queue must be a whole number"),
        ("day=2025-03-01&queue=99999999999999999999", "queue must be 0..1023"),
    ],
)
def test_it_answers_400_to_a_bad_query(signed_in: Client, query: str, message: str) -> None:
    api = signed_in.get(f"/api/v1/analytics/report?{query}")
    page = signed_in.get(f"/analytics/?{query}")

    assert api.status_code == 400
    assert api.json()["error"].startswith(message)
    assert page.status_code == 400
    assert 'class="error-message"' in page.content.decode()


def test_it_refuses_a_day_after_today(signed_in: Client) -> None:
    response = signed_in.get(f"/api/v1/analytics/report?day={tomorrow()}")

    assert response.status_code == 400
    assert "to today" in response.json()["error"]


@pytest.mark.parametrize(
    ("run_id", "status", "message"),
    [
        ("12345", 404, "no analytics run 12345"),
        ("0", 400, "run id must be >= 1"),
        ("-3", 400, "run id must be >= 1"),
        ("abc", 400, "run id must be a whole number"),
        ("18446744073709551616", 400, "run id must be at most"),
        ("1%00", 400, "run id must be a whole number"),
    ],
)
def test_it_answers_a_bad_or_unknown_run_id(
    signed_in: Client, run_id: str, status: int, message: str
) -> None:
    response = signed_in.get(f"/api/v1/analytics/runs/{run_id}")

    assert response.status_code == status
    assert response.json()["error"].startswith(message)


def test_it_answers_a_get_of_the_run_now_form_with_405(signed_in: Client) -> None:
    page = signed_in.get("/analytics/run")
    api = signed_in.get("/api/v1/analytics/runs")

    assert page.status_code == 405 and 'class="error-message"' in page.content.decode()
    assert api.status_code == 405 and api.json() == {"error": "use POST"}
