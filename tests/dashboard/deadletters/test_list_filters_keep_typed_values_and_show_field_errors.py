"""A dead-letter list filtered with values that cannot be used answers 400 with the list
page itself: every typed value is still in its input, each field's error stands next to
that field (all of them at once), and nothing is listed or offered for "Replay all
matching". The JSON twin answers the same filters with a 400 naming each problem."""

from __future__ import annotations

import re

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from tests.dashboard.deadletters.helpers import add_dead_letter, make_group, synced

pytestmark = pytest.mark.django_db

BAD = {
    "topic": "orders",
    "queue": "x",
    "key": "order-7",
    "status": "lost",
    "since": "yesterday",
    "until": "2026-13-01 09:00",
}


def _label_of(html: str, name: str) -> str:
    """The ``<label>`` holding the input or select named ``name``."""
    for label in re.findall(r"<label>.*?</label>", html, re.DOTALL):
        if f'name="{name}"' in label:
            return label
    raise AssertionError(f"no label holds the field {name!r}")


def test_it_shows_the_list_again_with_what_was_typed_and_each_fields_error(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    synced(redis_client, add_dead_letter(redis_client))
    client.force_login(viewer)

    response = client.get("/groups/billing/dead-letters", BAD)

    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="dl-filters"' in html and 'class="error-message"' not in html
    for name in ("topic", "queue", "key", "since", "until"):
        assert f'value="{BAD[name]}"' in _label_of(html, name), name
    errors = {
        "queue": "queue must be a whole number",
        "status": "unknown status &#x27;lost&#x27;",
        "since": "since must be epoch milliseconds or an ISO 8601 time",
        "until": "until must be epoch milliseconds or an ISO 8601 time",
    }
    for name, message in errors.items():
        assert 'class="form-error field-error"' in _label_of(html, name), name
        assert message in _label_of(html, name), name
    for name in ("topic", "key"):
        assert "form-error" not in _label_of(html, name), name
    assert "order-1" not in html.split('id="dl-filters"', 1)[1]


def test_it_puts_an_inverted_range_next_to_until(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    client.force_login(viewer)

    response = client.get(
        "/groups/billing/dead-letters", {"since": "2026-02-01", "until": "2026-01-01"}
    )

    assert response.status_code == 400
    html = response.content.decode()
    assert "since must not be after until" in _label_of(html, "until")
    assert 'value="2026-02-01"' in _label_of(html, "since")


def test_the_json_twin_names_every_problem_in_its_400(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    client.force_login(viewer)

    response = client.get("/api/v1/groups/billing/dead-letters", BAD)

    assert response.status_code == 400
    error = response.json()["error"]
    assert "queue must be a whole number" in error and "unknown status" in error
    assert "since must be" in error and "until must be" in error
