"""Every operator page: login required, linked from the navigation, and an error page
(never a 500) for unknown things and bad parameters."""

from __future__ import annotations

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.workers import create_topic
from lockstep.workers.topics import register_group

pytestmark = pytest.mark.django_db

PAGES = [
    "/",
    "/topics/orders/groups/mailer",
    "/topics/orders/queues/0",
    "/consumers",
    "/events",
    "/messages",
]


@pytest.mark.parametrize("path", PAGES)
def test_it_sends_an_anonymous_visitor_to_the_login_form(client: Client, path: str) -> None:
    response = client.get(path)

    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


@pytest.mark.parametrize("path", PAGES)
def test_it_renders_every_page_with_links_to_all_the_others(
    client: Client, viewer: User, redis_client: redis.Redis, path: str
) -> None:
    create_topic(redis_client, "orders", 2)
    register_group(redis_client, "orders", "mailer")
    client.force_login(viewer)

    response = client.get(path)

    assert response.status_code == 200
    html = response.content.decode()
    for link in (
        'href="/"',
        'href="/consumers"',
        'href="/events"',
        'href="/messages"',
        'href="/analytics/"',
    ):
        assert link in html
    assert html.count('aria-current="page"') == 1


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("/topics/payments/groups/mailer", 404, "no topic &#x27;payments&#x27;"),
        ("/topics/orders/groups/auditor", 404, "no consumer group &#x27;auditor&#x27;"),
        ("/topics/orders/queues/7", 404, "has no queue 7 (0..1)"),
        ("/topics/orders/queues/x", 400, "queue must be a whole number"),
        ("/topics/orders/queues/0?minutes=99999", 400, "minutes must be 1..1440"),
        ("/events?limit=lots", 400, "limit must be a whole number"),
        ("/messages?topic=payments&key=k", 404, "no topic &#x27;payments&#x27;"),
    ],
)
def test_it_renders_an_error_page_for_unknown_things_and_bad_parameters(
    client: Client, viewer: User, redis_client: redis.Redis, path: str, status: int, message: str
) -> None:
    create_topic(redis_client, "orders", 2)
    register_group(redis_client, "orders", "mailer")
    client.force_login(viewer)

    response = client.get(path)

    assert response.status_code == status
    assert message in response.content.decode()
