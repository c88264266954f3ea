"""GET /metrics with Redis unreachable: a 503 with one line of text (Prometheus records the
scrape as failed, ``up == 0``), never a 500 or a traceback, and it recovers with Redis."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_it_answers_503_with_one_line_when_redis_is_unreachable(
    client: Client, settings: Any, dead_redis_url: str
) -> None:
    settings.REDIS_URL = dead_redis_url

    response = client.get("/metrics")

    assert response.status_code == 503
    assert response["Content-Type"].startswith("text/plain")
    body = response.content.decode()
    assert body.endswith("\n") and body.count("\n") == 1
    assert "Redis" in body and "Traceback" not in body


def test_it_answers_again_once_redis_is_back(
    client: Client, settings: Any, redis_url: str, dead_redis_url: str
) -> None:
    settings.REDIS_URL = dead_redis_url
    assert client.get("/metrics").status_code == 503

    settings.REDIS_URL = redis_url

    assert client.get("/metrics").status_code == 200
