"""With LOCKSTEP_METRICS_TOKEN set, /metrics answers only "Authorization: Bearer <token>"
(401 otherwise); in production without a token it answers 403 saying to set one."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.test import Client

pytestmark = pytest.mark.django_db

TOKEN = "scrape-token-5f0c2a"


def test_it_answers_the_scraper_with_the_token(
    client: Client, settings: Any, redis_client: redis.Redis
) -> None:
    settings.LOCKSTEP_METRICS_TOKEN = TOKEN

    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert response.status_code == 200
    assert "lockstep_alerts" in response.content.decode()


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token", f"Basic {TOKEN}", "Bearer", f"Bearer {TOKEN}x"],
)
def test_it_answers_401_without_the_right_token(
    client: Client, settings: Any, redis_client: redis.Redis, authorization: str | None
) -> None:
    settings.LOCKSTEP_METRICS_TOKEN = TOKEN
    headers = {} if authorization is None else {"Authorization": authorization}

    response = client.get("/metrics", headers=headers)

    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "lockstep_" not in response.content.decode()


def test_it_answers_403_in_production_without_a_token(
    client: Client, settings: Any, redis_client: redis.Redis
) -> None:
    settings.PRODUCTION = True
    settings.LOCKSTEP_METRICS_TOKEN = ""

    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert response.status_code == 403
    assert "set LOCKSTEP_METRICS_TOKEN" in response.content.decode()


def test_it_stays_open_in_development_without_a_token(
    client: Client, settings: Any, redis_client: redis.Redis
) -> None:
    settings.LOCKSTEP_METRICS_TOKEN = ""

    assert client.get("/metrics").status_code == 200
