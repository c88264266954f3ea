"""The group, queue and overview pages render what the runtime did, server-side, with
their per-page scripts and data for them."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.workers import create_topic
from lockstep.workers import events as ev
from tests.dashboard.helpers import produce
from tests.dashboard.scenarios import FailOn, consuming, ingest_until
from tests.support import probe_until

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]


def _embedded(html: str, element_id: str) -> dict[str, Any]:
    found = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>', html, re.S
    )
    assert found, f"no #{element_id} in the page"
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def test_it_renders_the_queue_page_with_chart_data_timeline_and_retries(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 1)
    client.force_login(viewer)
    produce(redis_url, "orders", ["order-1", "order-poison"])

    with consuming(
        redis_url,
        "orders",
        "mailer",
        FailOn("order-poison", error="card declined"),
        consumer_id="c-1",
        suspend_ms=20,
    ):
        ingest_until(redis_client, ev.CONSUME_FAILED)
        html = probe_until(
            lambda: client.get("/topics/orders/queues/0").content.decode(),
            lambda h: 'class="problem"' in h,
        )

    assert "monitor/queue.js" in html and "uPlot.iife.min.js" in html
    assert 'id="queue-chart"' in html and 'id="lock-timeline"' in html
    assert 'class="queue-group" data-group="mailer"' in html
    assert 'data-key="order-poison" data-offset="1"' in html
    assert "card declined" in html
    data = _embedded(html, "queue-data")
    assert data["series"]["mailer"][-1][2] == 1  # committed up to the poison message
    assert [(i["consumer"], i["live"]) for i in data["timeline"]] == [("c-1", True)]
    assert data["socket_path"] == "/ws/queues/orders/0/"


def test_it_renders_the_group_page_with_each_queue(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 2)
    client.force_login(viewer)

    with consuming(redis_url, "orders", "mailer", FailOn(), consumer_id="c-1"):
        html = probe_until(
            lambda: client.get("/topics/orders/groups/mailer").content.decode(),
            lambda h: h.count('data-owner="c-1"') == 2,
        )

    assert "monitor/refresh.js" in html
    assert 'data-refresh-ms="2000"' in html
    assert html.count('class="group-queue') == 2
    assert "<code>c-1</code>" in html


def test_it_keeps_the_overview_shape_and_adds_stats(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 2)
    client.force_login(viewer)
    produce(redis_url, "orders", ["order-1"])

    with consuming(redis_url, "orders", "mailer", FailOn()):
        probe_until(
            lambda: client.get("/api/v1/overview").json()["topics"][0]["groups"],
            lambda groups: groups == ["mailer"],
        )
        html = client.get("/").content.decode()

    data = _embedded(html, "overview-data")
    assert set(data) == {"generated_at_ms", "topics", "stats"}
    assert set(data["topics"][0]) == {"name", "queue_count", "groups", "queues"}
    assert data["stats"]["topics"][0]["groups"][0]["group"] == "mailer"
    assert 'id="alerts"' in html and 'data-count="0"' in html
    assert 'data-queue-url="/topics/TOPIC/queues/QUEUE"' in html
