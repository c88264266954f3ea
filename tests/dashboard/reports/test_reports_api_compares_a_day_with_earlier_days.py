"""GET /api/v1/analytics/report: the report of a day built from the stored rows of its
latest successful run, one (topic, group)'s headline figures compared with the day
before and the same weekday a week earlier (their latest successful runs), the hourly
series (the group's, or one queue's), worst queues, stuck episodes with their links,
retry hotspots, key skew and lock churn."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.reports.models import (
    AnalyticsRun,
    GroupDay,
    HourlyGroup,
    HourlyQueue,
    KeySkew,
    QueueDay,
    RetryHotspot,
    StuckEpisode,
)
from tests.dashboard.deadletters.conftest import viewer

__all__ = ["viewer"]

pytestmark = pytest.mark.django_db

DAY = date(2025, 3, 12)  # a Wednesday
BEFORE, WEEK_BEFORE = DAY - timedelta(days=1), DAY - timedelta(days=7)


def run_of(day: date, status: str = AnalyticsRun.Status.OK, minutes_ago: int = 0) -> AnalyticsRun:
    started = datetime(day.year, day.month, day.day, 3, 0, tzinfo=UTC) + timedelta(days=1)
    started -= timedelta(minutes=minutes_ago)
    return AnalyticsRun.objects.create(
        day=day,
        status=status,
        started_at=started,
        finished_at=started + timedelta(minutes=2),
        duration_s=120.0,
        spark_master="local[2]",
        data_uri="var/analytics",
        stage="done" if status == AnalyticsRun.Status.OK else "",
        progress=100 if status == AnalyticsRun.Status.OK else 0,
    )


def group_day(run: AnalyticsRun, topic: str = "orders", group: str = "billing", **f: Any) -> None:
    GroupDay.objects.create(run=run, topic=topic, group=group, **f)


@pytest.fixture
def client_(client: Client, viewer: User) -> Client:
    client.force_login(viewer)
    return client


def report(client: Client, **params: Any) -> dict[str, Any]:
    response = client.get("/api/v1/analytics/report", params)
    assert response.status_code == 200, response.content
    return response.json()


def figure(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in data["headline"] if f["name"] == name)


def test_it_compares_each_headline_figure_with_the_day_before_and_a_week_earlier(
    client_: Client,
) -> None:
    today = run_of(DAY)
    group_day(
        today,
        time_lag_p99=12.5,
        lag_p99=40,
        seconds_above_threshold=600.0,
        produced=1000,
        consumed=990,
        retries=12,
        dead_letters=3,
        dead_letter_rate=3 / 990,
        stuck_episodes=2,
        owner_changes=4,
        rebalances=1,
        fencing_rejections=0,
    )
    group_day(today, group="mailer", time_lag_p99=1.0)
    # The day before was run twice: its latest successful run is the one compared with;
    # a failed run after it changes nothing.
    group_day(run_of(BEFORE, minutes_ago=90), time_lag_p99=99.0, retries=99)
    group_day(
        run_of(BEFORE, minutes_ago=30),
        time_lag_p99=10.0,
        lag_p99=50,
        seconds_above_threshold=0.0,
        produced=800,
        consumed=800,
        retries=20,
        dead_letters=0,
        dead_letter_rate=0.0,
        stuck_episodes=2,
        owner_changes=1,
        rebalances=1,
        fencing_rejections=0,
    )
    run_of(BEFORE, status=AnalyticsRun.Status.FAILED, minutes_ago=5)
    # A week earlier has a report, but without orders/billing in it.
    group_day(run_of(WEEK_BEFORE), group="mailer", time_lag_p99=3.0)

    data = report(client_, day="2025-03-12", topic="orders", group="billing")

    assert data["day"] == "2025-03-12"
    assert data["run"]["id"] == today.pk
    assert data["selected"] == {"topic": "orders", "group": "billing", "queue": None}
    assert data["compared_with"] == {
        "previous": {
            "day": "2025-03-11",
            "run_id": data["compared_with"]["previous"]["run_id"],
            "state": "ok",
        },
        "week_earlier": {
            "day": "2025-03-05",
            "run_id": data["compared_with"]["week_earlier"]["run_id"],
            "state": "no_figures",
        },
    }
    latest_before = AnalyticsRun.objects.report_of(BEFORE)
    assert latest_before is not None
    assert data["compared_with"]["previous"]["run_id"] == latest_before.pk
    assert [f["name"] for f in data["headline"]] == [
        "time_lag_p99",
        "lag_p99",
        "seconds_above_threshold",
        "produced",
        "consumed",
        "retries",
        "dead_letters",
        "dead_letter_rate",
        "stuck_episodes",
        "owner_changes",
        "rebalances",
        "fencing_rejections",
    ]
    lag = figure(data, "time_lag_p99")
    assert lag["value"] == 12.5
    assert lag["previous"] == {"value": 10.0, "delta": 2.5, "relative": 0.25, "change": "worse"}
    assert lag["week_earlier"] is None
    assert figure(data, "lag_p99")["previous"] == {
        "value": 50,
        "delta": -10,
        "relative": -0.2,
        "change": "better",
    }
    assert figure(data, "retries")["previous"]["delta"] == -8
    assert figure(data, "retries")["previous"]["change"] == "better"
    # Throughput is neither better nor worse for being higher; from zero, no ratio.
    assert figure(data, "produced")["previous"]["change"] == "changed"
    assert figure(data, "produced")["previous"]["delta"] == 200
    assert figure(data, "seconds_above_threshold")["previous"]["relative"] is None
    assert figure(data, "stuck_episodes")["previous"]["change"] == "same"
    rate = figure(data, "dead_letter_rate")["previous"]
    assert rate["delta"] == pytest.approx(3 / 990) and rate["change"] == "worse"
    assert [p["group"] for p in data["pairs"]] == ["billing", "mailer"]
    assert [p["selected"] for p in data["pairs"]] == [True, False]


def test_it_says_no_report_when_the_earlier_days_have_none(client_: Client) -> None:
    group_day(run_of(DAY), time_lag_p99=2.0)
    run_of(BEFORE, status=AnalyticsRun.Status.FAILED)

    data = report(client_, day="2025-03-12")

    assert data["compared_with"]["previous"] == {
        "day": "2025-03-11",
        "run_id": None,
        "state": "no_report",
    }
    assert data["compared_with"]["week_earlier"]["state"] == "no_report"
    assert all(f["previous"] is None and f["week_earlier"] is None for f in data["headline"])


def test_it_shows_the_latest_day_with_a_report_by_default(client_: Client) -> None:
    group_day(run_of(DAY), time_lag_p99=2.0)
    # Run later, but of an earlier day; and a later day whose only run failed.
    group_day(run_of(BEFORE, minutes_ago=-600), time_lag_p99=1.0)
    run_of(DAY + timedelta(days=1), status=AnalyticsRun.Status.FAILED)

    data = report(client_)

    assert data["day"] == "2025-03-12"
    assert data["days"]["latest_report"] == "2025-03-12"
    assert data["days"]["previous"] == "2025-03-11"
    assert data["days"]["next"] == "2025-03-13"
    assert data["days"]["week_earlier"] == "2025-03-05"


def test_it_gives_the_hourly_series_of_the_group_or_of_one_queue(client_: Client) -> None:
    run = run_of(DAY)
    group_day(run)
    for hour in (0, 1, 5):
        HourlyGroup.objects.create(
            run=run, topic="orders", group="billing", hour=hour, lag_p99=hour * 10, produced=7
        )
        HourlyQueue.objects.create(
            run=run, topic="orders", group="billing", queue=2, hour=hour, lag_p99=hour, consumed=3
        )
    QueueDay.objects.create(run=run, topic="orders", group="billing", queue=2)
    HourlyGroup.objects.create(run=run, topic="orders", group="mailer", hour=3, lag_p99=999)

    group = report(client_, day="2025-03-12")["hourly"]
    queue = report(client_, day="2025-03-12", queue="2")["hourly"]
    unknown = report(client_, day="2025-03-12", queue="7")

    assert group["queue"] is None
    assert [(r["hour"], r["lag_p99"], r["produced"]) for r in group["rows"]] == [
        (0, 0, 7),
        (1, 10, 7),
        (5, 50, 7),
    ]
    assert queue["queue"] == 2
    assert [(r["hour"], r["lag_p99"], r["consumed"]) for r in queue["rows"]] == [
        (0, 0, 3),
        (1, 1, 3),
        (5, 5, 3),
    ]
    assert unknown["hourly"]["queue"] is None
    assert unknown["notice"] == "queue 7 has no figures on this day: showing the whole group."


def test_it_lists_the_worst_queues_first_and_the_lock_churn(client_: Client) -> None:
    run = run_of(DAY)
    group_day(run)
    rows: dict[int, dict[str, Any]] = {
        0: {"time_lag_p99": 3.0, "seconds_above_threshold": 0.0},
        1: {"time_lag_p99": 40.0, "seconds_above_threshold": 100.0, "owner_changes": 2},
        2: {"time_lag_p99": 40.0, "seconds_above_threshold": 900.0, "fencing_rejections": 1},
        3: {"time_lag_p99": None, "seconds_above_threshold": 0.0, "lock_losses": 5},
    }
    for queue, fields in rows.items():
        QueueDay.objects.create(run=run, topic="orders", group="billing", queue=queue, **fields)

    data = report(client_, day="2025-03-12")

    assert [q["queue"] for q in data["queues"]] == [2, 1, 0, 3]
    assert data["queues"][0]["links"] == {"queue": "/topics/orders/queues/2"}
    assert [(q["queue"], q["lock_losses"]) for q in data["lock_churn"]] == [(3, 5), (1, 0), (2, 0)]


def test_it_links_stuck_episodes_to_the_queue_the_message_and_the_dead_letters(
    client_: Client,
) -> None:
    run = run_of(DAY)
    group_day(run)
    at = datetime(2025, 3, 12, 4, 0, tzinfo=UTC)
    common = {"run": run, "topic": "orders", "group": "billing", "retries": 5, "max_behind": 30}
    StuckEpisode.objects.create(
        **common,
        queue=1,
        level="key",
        key="card 42",
        offset=17,
        started_at=at,
        ended_at=at + timedelta(minutes=5),
        last_seen_at=at + timedelta(minutes=5),
        duration_s=300.0,
        outcome="dead_lettered",
        error="CardDeclined: no",
    )
    StuckEpisode.objects.create(
        **common,
        queue=3,
        level="queue",
        key="",
        offset=99,
        started_at=at + timedelta(hours=10),
        ended_at=None,
        last_seen_at=at + timedelta(hours=19),
        open=True,
        duration_s=9 * 3600.0,
        outcome="open",
    )

    episodes = report(client_, day="2025-03-12")["stuck_episodes"]

    assert [(e["queue"], e["open"], e["ended_at"]) for e in episodes] == [
        (3, True, None),
        (1, False, "2025-03-12T04:05:00+00:00"),
    ]
    assert episodes[0]["links"] == {
        "queue": "/topics/orders/queues/3",
        "key": None,
        "message": "/messages?topic=orders&queue=3&offset=99",
        "dead_letters": None,
    }
    assert episodes[1]["links"] == {
        "queue": "/topics/orders/queues/1",
        "key": "/messages?topic=orders&key=card+42",
        "message": "/messages?topic=orders&key=card+42",
        "dead_letters": "/groups/billing/dead-letters?topic=orders&queue=1&key=card+42"
        "&since=2025-03-12T04%3A00%3A00%2B00%3A00",
    }


def test_it_reports_retry_hotspots_and_marks_the_skewed_queue(client_: Client) -> None:
    run = run_of(DAY)
    group_day(run)
    hot = {"run": run, "topic": "orders", "group": "billing"}
    RetryHotspot.objects.create(**hot, kind="key", name="k1", retries=9, dead_letters=1)
    RetryHotspot.objects.create(**hot, kind="error", name="Timeout", retries=9, dead_letters=1)
    skew = {"run": run, "topic": "orders", "keys": 10, "top10_share": 1.0, "max_over_mean": 2.0}
    KeySkew.objects.create(
        **skew,
        queue=0,
        messages=100,
        top_key="a",
        top_key_share=0.2,
        share_of_topic=0.2,
        over_topic_mean=0.8,
    )
    KeySkew.objects.create(
        **skew,
        queue=1,
        messages=300,
        top_key="b",
        top_key_share=0.6,
        share_of_topic=0.6,
        over_topic_mean=2.4,
    )
    KeySkew.objects.create(
        **{**skew, "topic": "other"},
        queue=0,
        messages=5,
        top_key_share=1.0,
        share_of_topic=1.0,
        over_topic_mean=1.0,
    )

    data = report(client_, day="2025-03-12")

    assert [(h["name"], h["links"]) for h in data["retry_hotspots"]["keys"]] == [
        ("k1", {"lookup": "/messages?topic=orders&key=k1"})
    ]
    assert [(h["name"], h["links"]) for h in data["retry_hotspots"]["errors"]] == [
        ("Timeout", {"dead_letters": "/groups/billing/dead-letters?topic=orders&error=Timeout"})
    ]
    assert [(s["queue"], s["skewed"]) for s in data["key_skew"]] == [(0, False), (1, True)]


def test_it_shows_the_days_latest_attempt_with_its_progress(client_: Client) -> None:
    group_day(run_of(DAY, minutes_ago=60), time_lag_p99=2.0)
    running = run_of(DAY, status=AnalyticsRun.Status.RUNNING)
    AnalyticsRun.objects.filter(pk=running.pk).update(stage="stuck", progress=60)

    data = report(client_, day="2025-03-12")

    assert data["run"]["status"] == "ok"
    assert data["attempt"]["id"] == running.pk
    assert (data["attempt"]["stage"], data["attempt"]["progress"]) == ("stuck", 60)
    assert data["attempt"]["active"] is True
    assert data["attempt"]["links"]["state"] == f"/api/v1/analytics/runs/{running.pk}"


def test_it_answers_an_empty_report_for_a_day_without_one(client_: Client) -> None:
    data = report(client_, day="2025-03-12", topic="orders", group="billing", queue="1")

    assert data["run"] is None and data["attempt"] is None
    assert data["selected"] is None
    assert data["headline"] == [] and data["queues"] == [] and data["stuck_episodes"] == []
    assert data["may_run"] is False
