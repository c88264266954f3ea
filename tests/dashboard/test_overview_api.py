"""GET /api/v1/overview and the overview page: who may see them, and whether the numbers
are the ones the runtime left in Redis."""

from __future__ import annotations

import time

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.workers import create_topic
from tests.dashboard.helpers import (
    get_json,
    group_rows,
    per_queue,
    produce,
    running_consumer,
    summary_group,
)
from tests.support import probe_until

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster, pytest.mark.on_postgres]

QUEUES = 8


def test_it_answers_an_anonymous_visitor_with_401_json(client: Client) -> None:
    response = client.get("/api/v1/overview")

    assert response.status_code == 401
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"error": "authentication required"}


def test_it_sends_an_anonymous_visitor_from_the_page_to_the_login_form(client: Client) -> None:
    response = client.get("/")

    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/"


def test_it_shows_a_logged_in_user_the_page_with_the_live_script(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    create_topic(redis_client, "orders", QUEUES)
    client.force_login(viewer)

    response = client.get("/")

    assert response.status_code == 200
    html = response.content.decode()
    # A topic without a consumer group is a line of the summary of its own.
    assert '<tr class="summary-row no-group" data-topic="orders" data-group="">' in html
    assert f"{QUEUES} queues, no consumer group yet" in html
    assert "monitor/overview.js" in html
    assert 'id="overview-data"' in html


def test_it_reports_owner_offsets_and_lag_as_the_runtime_left_them(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", QUEUES)
    first = produce(redis_url, "orders", [f"order-{i}" for i in range(24)])
    client.force_login(viewer)

    with running_consumer(redis_url, "orders", "mailer") as (consumer, recorder):
        probe_until(recorder.count, lambda n: n == len(first))
        consumed = per_queue(first)
        while_running = probe_until(
            lambda: group_rows(client, "orders", "mailer"),
            lambda rows: all(rows[q]["committed_offset"] == consumed[q] for q in range(QUEUES)),
        )

    assert recorder.count() == len(first)
    assert sorted(while_running) == list(range(QUEUES))
    for q in range(QUEUES):
        assert while_running[q]["owner"] == consumer.consumer_id
        assert while_running[q]["owner_live"] is True
        assert while_running[q]["token"] >= 1
        assert while_running[q]["committed_offset"] == consumed[q]
        assert while_running[q]["max_offset"] == consumed[q]
        assert while_running[q]["lag"] == 0

    second = produce(redis_url, "orders", [f"order-{i}" for i in range(100, 110)])
    time.sleep(0.1)  # so the oldest unconsumed message is measurably old
    overview = get_json(client, "/api/v1/overview")
    after = group_rows(client, "orders", "mailer")

    waiting = per_queue(second)
    (topic,) = overview["summary"]["topics"]
    assert (topic["name"], topic["queue_count"], topic["groups"]) == ("orders", QUEUES, 1)
    assert overview["summary"]["group_count"] == 1
    group = summary_group(overview, "orders", "mailer")
    assert (group["queues"], group["owned"], group["owners"]) == (QUEUES, 0, 0)
    assert group["lag"] == len(second)
    for q in range(QUEUES):
        assert after[q]["owner"] is None, "a stopped consumer releases its queues"
        assert after[q]["owner_live"] is False
        assert after[q]["committed_offset"] == consumed[q]
        assert after[q]["max_offset"] == consumed[q] + waiting[q]
        assert after[q]["lag"] == waiting[q]
        if waiting[q]:
            assert after[q]["time_lag_s"] >= 0.1
        else:
            assert after[q]["time_lag_s"] == 0.0
