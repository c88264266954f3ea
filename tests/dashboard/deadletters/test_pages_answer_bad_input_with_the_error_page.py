"""Unknown groups and records, and parameters that cannot be used, get the error page with
a clear message and a 4xx status on every dead-letter page: never a 500. (The list's
filters a user types are answered on the list itself, next to each field:
test_list_filters_keep_typed_values_and_show_field_errors.py.)"""

from __future__ import annotations

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from tests.dashboard.deadletters.helpers import add_dead_letter, make_group, synced

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("/groups/nobody/dead-letters", 404, "no consumer group &#x27;nobody&#x27;"),
        ("/groups/billing/dead-letters?sort=key", 400, "sort must be one of"),
        ("/groups/billing/dead-letters?cursor=%25%25%25", 400, "cursor is not one this list gave"),
        ("/groups/billing/dead-letters?limit=0", 400, "limit must be 1..500"),
        ("/groups/billing/dead-letters/999", 404, "no dead letter 999 in group"),
        ("/groups/billing/dead-letters/abc", 400, "id must be a whole number"),
        ("/groups/mailer/dead-letters/{pk}", 404, "no dead letter {pk} in group"),
        ("/audit?limit=lots", 400, "limit must be a whole number"),
        ("/audit?limit=100000", 400, "limit must be 1..500"),
    ],
)
def test_it_renders_the_error_page_for_unknown_things_and_bad_parameters(
    client: Client, viewer: User, redis_client: redis.Redis, path: str, status: int, message: str
) -> None:
    make_group(redis_client)
    make_group(redis_client, group="mailer")
    record = synced(redis_client, add_dead_letter(redis_client))
    client.force_login(viewer)

    response = client.get(path.format(pk=record.pk))

    assert response.status_code == status
    html = response.content.decode()
    assert 'class="error-message"' in html
    assert message.format(pk=record.pk) in html


def test_it_keeps_a_group_readable_after_it_left_redis(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    record = synced(redis_client, add_dead_letter(redis_client, key="order-gone"))
    redis_client.flushall()
    client.force_login(viewer)

    listed = client.get("/groups/billing/dead-letters")
    shown = client.get(f"/groups/billing/dead-letters/{record.pk}")
    groups = client.get("/dead-letters")

    assert listed.status_code == shown.status_code == groups.status_code == 200
    assert "order-gone" in listed.content.decode()
    assert shown.context["data"]["hold"] is None
    assert "no longer subscribed" in groups.content.decode()
