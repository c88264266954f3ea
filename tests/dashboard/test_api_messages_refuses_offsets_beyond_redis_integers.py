"""An offset or queue too large for a Redis integer is refused with a 400 that says so,
not passed on to Redis (which answered with an error, a 500)."""

from __future__ import annotations

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.workers import create_topic

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]


@pytest.mark.parametrize(
    "query",
    [
        "topic=orders&queue=3&offset=18446744073709551616",
        "topic=orders&queue=3&offset=9223372036854775808",
        "topic=orders&queue=99999999999999999999&offset=1",
    ],
)
def test_it_refuses_numbers_beyond_redis_integers(
    client: Client, viewer: User, redis_client: redis.Redis, query: str
) -> None:
    create_topic(redis_client, "orders", 4)
    client.force_login(viewer)
    response = client.get(f"/api/v1/messages?{query}")
    assert response.status_code == 400
    assert "must be" in response.json()["error"]


def test_the_largest_redis_integer_is_looked_up_and_not_found(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    create_topic(redis_client, "orders", 4)
    client.force_login(viewer)
    response = client.get("/api/v1/messages?topic=orders&queue=3&offset=9223372036854775807")
    assert response.status_code == 404
