"""GET /api/v1/consumers (and its page): every live consumer instance with host, pid,
heartbeat age and the queues it was assigned and holds."""

from __future__ import annotations

import os
import socket
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.workers import create_topic
from tests.dashboard.scenarios import FailOn, consuming
from tests.support import probe_until

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]


def _consumers(client: Client) -> list[dict[str, Any]]:
    response = client.get("/api/v1/consumers")
    assert response.status_code == 200
    found: list[dict[str, Any]] = response.json()["consumers"]
    return found


def test_it_answers_an_anonymous_visitor_with_401_json(client: Client) -> None:
    response = client.get("/api/v1/consumers")

    assert response.status_code == 401
    assert response.json() == {"error": "authentication required"}


def test_it_lists_each_instance_with_its_assigned_queues(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 4)
    client.force_login(viewer)

    with (
        consuming(redis_url, "orders", "mailer", FailOn(), consumer_id="a"),
        consuming(redis_url, "orders", "mailer", FailOn(), consumer_id="b"),
    ):
        found = probe_until(
            lambda: _consumers(client),
            lambda cs: [[len(s["held"]) for s in c["subscriptions"]] for c in cs] == [[2], [2]],
        )
        page = client.get("/consumers")

    assert [c["id"] for c in found] == ["a", "b"]
    for consumer, queues in zip(found, ([0, 1], [2, 3]), strict=True):
        assert (consumer["host"], consumer["pid"]) == (socket.gethostname(), os.getpid())
        assert 0 <= consumer["heartbeat_age_s"] < 5
        assert consumer["started_at_ms"] > 0
        (sub,) = consumer["subscriptions"]
        assert {k: sub[k] for k in ("topic", "group", "model", "ordering", "assigned")} == {
            "topic": "orders",
            "group": "mailer",
            "model": "clustering",
            "ordering": "queue",
            "assigned": queues,
        }
        assert [h["queue"] for h in sub["held"]] == queues
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-consumer="a"' in html and 'data-consumer="b"' in html
    assert 'data-assigned="0,1"' in html and 'data-assigned="2,3"' in html


def test_it_lists_no_consumer_once_they_stopped(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 1)
    client.force_login(viewer)
    with consuming(redis_url, "orders", "mailer", FailOn()):
        assert probe_until(lambda: _consumers(client), lambda cs: len(cs) == 1)

    assert _consumers(client) == []
    assert "No live consumer" in client.get("/consumers").content.decode()
