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
from tests.dashboard.helpers import get_json, produce, row_id
from tests.dashboard.scenarios import FailOn, consuming, ingest_until
from tests.support import probe_until

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster, pytest.mark.on_postgres]


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


def test_it_renders_the_overview_summary_worst_queues_and_table_with_the_socket_view(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 2)
    client.force_login(viewer)
    produce(redis_url, "orders", ["order-1"])

    with consuming(redis_url, "orders", "mailer", FailOn(), consumer_id="c-1"):
        probe_until(
            lambda: get_json(client, "/api/v1/overview")["summary"]["groups"],
            lambda groups: (
                [(g["group"], g["owned"], g["lag"]) for g in groups] == [("mailer", 2, 0)]
            ),
        )
        html = client.get("/").content.decode()

    ids = [row_id("orders", "mailer", q) for q in (0, 1)]
    data = _embedded(html, "overview-data")
    assert set(data) == {"generated_at_ms", "summary", "worst", "table", "rows", "order"}
    assert data["order"] == ids and set(data["rows"]) == set(ids)
    assert [(data["rows"][i]["owner"], data["rows"][i]["lag"]) for i in ids] == [("c-1", 0)] * 2
    assert [(g["topic"], g["group"]) for g in data["summary"]["groups"]] == [("orders", "mailer")]
    assert (data["table"]["total"], data["worst"]) == (2, [])
    assert '<tr class="summary-row" data-topic="orders" data-group="mailer"' in html
    for q in (0, 1):
        assert f'data-topic="orders" data-group="mailer" data-queue="{q}"' in html
    assert '<td class="owner mono" data-owner="c-1">c-1</td>' in html
    assert '<p id="no-worst" class="none">No queue is stuck, unowned or behind.</p>' in html
    assert 'data-queue-url="/topics/TOPIC/queues/QUEUE"' in html
