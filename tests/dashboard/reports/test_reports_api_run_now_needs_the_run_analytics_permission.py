""" "Run now": POST /api/v1/analytics/runs (JSON, X-CSRFToken) and the page's form POST
/analytics/run queue a run of the day for a Celery worker; both need
``reports.run_analytics``, which the operator and admin roles hold and the viewer role
does not. A day already queued or running is answered with that run (409). The run's
state is GET /api/v1/analytics/runs/<id>."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest
import redis
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

# Imported at collection, so its tasks are registered with the Celery app before the
# suite's session fixture closes the app: ``Celery.close`` also takes the app off the
# active apps that a task module imported later would be registered with.
import lockstep.dashboard.reports.tasks  # noqa: F401
from lockstep.dashboard.reports.models import AnalyticsRun
from tests.dashboard.deadletters.conftest import admin_user, operator, viewer

__all__ = ["admin_user", "operator", "viewer"]

pytestmark = pytest.mark.django_db

DAY = "2025-03-12"
START = "/api/v1/analytics/runs"


def signed_in(user: User, **client_args: Any) -> Client:
    client = Client(**client_args)
    client.force_login(user)
    return client


def start(client: Client, body: Any, **extra: Any) -> Any:
    return client.post(START, json.dumps(body), content_type="application/json", **extra)


def test_it_refuses_a_viewer_with_403_and_queues_nothing(viewer: User) -> None:
    client = signed_in(viewer)

    api = start(client, {"day": DAY})
    form = client.post("/analytics/run", {"day": DAY})

    assert api.status_code == 403
    assert api.json() == {"error": "your role does not allow you to start an analytics run"}
    assert form.status_code == 403
    assert 'class="error-message"' in form.content.decode()
    assert not AnalyticsRun.objects.exists()


def test_it_hides_run_now_from_a_viewer_and_offers_it_to_an_operator(
    viewer: User, operator: User
) -> None:
    as_viewer = signed_in(viewer).get(f"/analytics/?day={DAY}").content.decode()
    as_operator = signed_in(operator).get(f"/analytics/?day={DAY}").content.decode()

    assert 'id="run-now-button" disabled' in as_viewer
    assert '<button type="submit" class="button primary-small" id="run-now-button">' in as_operator


def test_it_queues_a_run_for_an_operator_and_sends_the_task_to_the_broker(
    operator: User,
    redis_client: redis.Redis,
    django_capture_on_commit_callbacks: Any,
) -> None:
    client = signed_in(operator, enforce_csrf_checks=True)
    client.get(f"/analytics/?day={DAY}")  # sets the CSRF cookie, as the page does
    token = client.cookies["csrftoken"].value

    with django_capture_on_commit_callbacks(execute=True):
        response = start(client, {"day": DAY}, HTTP_X_CSRFTOKEN=token)

    assert response.status_code == 202, response.content
    run = AnalyticsRun.objects.get()
    assert (run.day, run.status, run.trigger, run.requested_by) == (
        date(2025, 3, 12),
        AnalyticsRun.Status.QUEUED,
        AnalyticsRun.Trigger.PAGE,
        "operator",
    )
    body = response.json()
    assert (body["id"], body["status"], body["active"]) == (run.pk, "queued", True)
    assert body["links"]["state"] == f"/api/v1/analytics/runs/{run.pk}"
    # The task message waits in the suite's Redis, Celery's broker, in the analytics
    # worker's own queue (no worker listens), not in the live tasks' queue.
    assert redis_client.llen(settings.LOCKSTEP_CELERY_QUEUE) == 0
    queue = settings.LOCKSTEP_ANALYTICS_CELERY_QUEUE
    queued = [json.loads(m) for m in redis_client.lrange(queue, 0, -1)]
    assert [(m["headers"]["task"], m["headers"]["argsrepr"]) for m in queued] == [
        ("lockstep.dashboard.reports.tasks.run_requested_analytics", f"({run.pk},)")
    ]


def test_it_refuses_a_post_without_the_csrf_token(operator: User) -> None:
    client = signed_in(operator, enforce_csrf_checks=True)

    response = start(client, {"day": DAY})

    assert response.status_code == 403
    assert response.json()["error"].startswith("CSRF check failed")
    assert not AnalyticsRun.objects.exists()


def test_it_points_at_the_run_already_under_way_for_that_day(admin_user: User) -> None:
    client = signed_in(admin_user)
    first = start(client, {"day": DAY}).json()

    again = start(client, {"day": DAY})
    form = client.post("/analytics/run", {"day": DAY, "topic": "orders", "group": "billing"})

    assert again.status_code == 409
    assert again.json()["run"]["id"] == first["id"]
    assert again.json()["error"] == f"analytics run {first['id']} of {DAY} is already queued"
    assert form.status_code == 302
    assert form["Location"] == f"/analytics/?day={DAY}&topic=orders&group=billing"
    page = client.get(form["Location"]).content.decode()
    assert f"Run {first['id']} of {DAY} is already queued." in page
    assert AnalyticsRun.objects.count() == 1


def test_the_page_form_queues_a_run_and_goes_back_to_the_day(operator: User) -> None:
    client = signed_in(operator)

    response = client.post("/analytics/run", {"day": DAY})

    run = AnalyticsRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/analytics/?day={DAY}"
    page = client.get(response["Location"]).content.decode()
    assert f"Queued analytics run {run.pk} of {DAY}." in page
    assert f'data-run-id="{run.pk}"' in page and 'data-status="queued"' in page


def test_it_answers_a_runs_state_while_it_runs(viewer: User) -> None:
    run = AnalyticsRun.objects.create(
        day=date(2025, 3, 12), status="running", stage="lag", progress=40, spark_master="x"
    )
    client = signed_in(viewer)

    state = client.get(f"/api/v1/analytics/runs/{run.pk}").json()

    assert (state["id"], state["status"], state["stage"], state["progress"]) == (
        run.pk,
        "running",
        "lag",
        40,
    )
    assert state["active"] is True
    assert state["links"]["report"] == f"/analytics/?day={DAY}"
    run.finish(AnalyticsRun.Status.FAILED, error="Py4JError: boom")
    done = client.get(f"/api/v1/analytics/runs/{run.pk}").json()
    assert (done["status"], done["active"], done["error"]) == ("failed", False, "Py4JError: boom")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, 'give the day to analyse: {"day": "YYYY-MM-DD"}'),
        ({"day": 20250312}, 'give the day to analyse: {"day": "YYYY-MM-DD"}'),
        ({"day": "2025-02-30"}, "day '2025-02-30' is not a date of the calendar"),
        ({"day": "12/03/2025"}, "day must be a date as YYYY-MM-DD, got '12/03/2025'"),
        ({"day": "1999-12-31"}, "day must be from 2000-01-01 to today"),
        ({"day": "2025-03-12\x00"}, "day must not contain NUL characters"),
        ([DAY], 'the request body must be a JSON object: {"day": "YYYY-MM-DD"}'),
    ],
)
def test_it_refuses_a_bad_day_to_run(operator: User, body: Any, message: str) -> None:
    response = start(signed_in(operator), body)

    assert response.status_code == 400
    assert response.json()["error"].startswith(message)
    assert not AnalyticsRun.objects.exists()


def test_it_refuses_anonymous_visitors(client: Client) -> None:
    assert start(client, {"day": DAY}).status_code == 401
    assert client.get("/api/v1/analytics/runs/1").status_code == 401
    assert client.post("/analytics/run", {"day": DAY})["Location"].startswith("/login/")
