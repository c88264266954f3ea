"""The whole job end to end on a real local Spark: data written in the real layout under
the configured URI, ``manage.py run_analytics --date``, results read back through the
reports page's JSON; a re-run of the day replaces its report; a run asked for on the
page reports its progress and ends with the same report."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from pyspark.sql import SparkSession

from lockstep.dashboard.reports import tasks
from lockstep.dashboard.reports.models import AnalyticsRun, StuckEpisode
from lockstep.dashboard.web.roles import OPERATOR, grant_role
from tests.analytics.builders import DAY, at, blocked_key, event, message, sample, write

pytestmark = pytest.mark.django_db


def _write_day(uri: str) -> None:
    messages = [
        message(at(h, m), f"k{m % 7}", queue=q) for q in range(3) for h in (0, 1) for m in range(10)
    ]
    messages += [message(at(1, m), "hot", queue=3) for m in range(50)]  # the skewed queue
    samples = []
    for q in range(4):
        for i in range(40):  # every 30 s from 00:00 to 00:19:30
            stuck = q == 1 and 10 <= i < 20  # queue 1 stuck at offset 77 for 5 minutes
            samples.append(
                sample(
                    at(0, 0, 30 * i),
                    queue=q,
                    committed=77 if stuck else 70 + i * 3,
                    lag=12 if stuck else 0,
                    time_lag_s=400.0 if stuck else 0.5,
                    head_key="order-7" if stuck else "",
                )
            )
    blocked = [blocked_key("acct-9", 5, at(23, 40), retries=4, waiting=3)]
    samples += [
        sample(at(23, 40 + m), queue=0, group="billing", lag=4, blocked=blocked, key_ordering=True)
        for m in range(20)
    ]
    events = [
        event(
            "consume_failed", at(0, 6), queue=1, key="order-7", n=1, offset=77, error="KeyError: a"
        ),
        event(
            "dead_lettered", at(0, 9, 50), queue=1, key="order-7", offset=77, error="KeyError: a"
        ),
        event("lock_acquired", at(0, 1), queue=2),
        event("rebalance", at(0, 1), queue=None),
    ]
    write(uri, "messages", messages)
    write(uri, "samples", samples)
    write(uri, "events", events)


def _run_command() -> str:
    out = StringIO()
    call_command("run_analytics", date=DAY.isoformat(), master="local[2]", stdout=out)
    return out.getvalue()


def _report(client: Client, group: str = "mailer") -> dict[str, Any]:
    response = client.get(
        "/api/v1/analytics/report", {"day": DAY.isoformat(), "topic": "orders", "group": group}
    )
    assert response.status_code == 200, response.content
    return json.loads(response.content)


def test_the_command_stores_a_report_that_the_page_json_shows(
    spark: SparkSession, analytics_uri: str, viewer_client: Client
):
    _write_day(analytics_uri)
    output = _run_command()
    assert "ok" in output

    report = _report(viewer_client)
    assert report["run"]["status"] == "ok"
    [episode] = report["stuck_episodes"]
    assert (episode["queue"], episode["offset"], episode["key"]) == (1, 77, "order-7")
    assert (episode["outcome"], episode["duration_s"], episode["open"]) == (
        "dead_lettered",
        290.0,  # 00:05:00 to its dead letter at 00:09:50
        False,
    )
    skew = {row["queue"]: row for row in report["key_skew"]}
    assert skew[3]["top_key"] == "hot"
    assert max(skew, key=lambda q: skew[q]["over_topic_mean"]) == 3
    produced = sum(row["produced"] for row in report["hourly"]["rows"])
    assert produced == 3 * 2 * 10 + 50
    by_name = {figure["name"]: figure["value"] for figure in report["headline"]}
    assert by_name["dead_letters"] == 1
    assert by_name["rebalances"] == 1

    billing = _report(viewer_client, "billing")
    [held] = billing["stuck_episodes"]
    assert (held["level"], held["key"], held["open"]) == ("key", "acct-9", True)

    # Re-running the day replaces its report instead of adding a second one.
    _run_command()
    assert AnalyticsRun.objects.filter(day=DAY, status=AnalyticsRun.Status.OK).count() == 1
    assert StuckEpisode.objects.filter(key="order-7").count() == 1


def test_a_run_asked_for_on_the_page_shows_its_progress_and_its_report(
    spark: SparkSession,
    analytics_uri: str,
    client: Client,
    django_user_model: Any,
    django_capture_on_commit_callbacks: Any,
):
    _write_day(analytics_uri)
    operator = django_user_model.objects.create_user("olga")
    grant_role(operator, OPERATOR)
    client.force_login(operator)

    with pytest.MonkeyPatch.context() as patch:
        queued: list[int] = []
        patch.setattr(tasks.run_requested_analytics, "delay", lambda run_id: queued.append(run_id))
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                "/api/v1/analytics/runs",
                data=json.dumps({"day": DAY.isoformat()}),
                content_type="application/json",
            )
        assert response.status_code == 202, response.content
        run_id = json.loads(response.content)["id"]
        assert queued == [run_id]  # handed to a Celery worker once the request committed

    state = json.loads(client.get(f"/api/v1/analytics/runs/{run_id}").content)
    assert state["status"] == "queued"

    tasks.run_requested_analytics(run_id)  # what the worker does with the task

    state = json.loads(client.get(f"/api/v1/analytics/runs/{run_id}").content)
    assert (state["status"], state["progress"], state["stage"]) == ("ok", 100, "done")
    assert _report(client)["run"]["id"] == run_id
