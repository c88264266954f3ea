"""A group's dead-letter page: filters, the count waiting, sort, cursor pages, and links
(export, JSON twin) that keep the filter; the groups page counts them per group."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.deadletters.models import DeadLetter
from lockstep.dashboard.deadletters.sync import sync_all
from tests.dashboard.deadletters.helpers import T0_MS, add_dead_letter, make_group

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]


def _ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'class="dead-letter-row" data-id="(\d+)"', html)]


def _href(html: str, element_id: str) -> str:
    found = re.search(rf'id="{element_id}" href="([^"]*)"', html)
    assert found, f"no #{element_id}"
    return found.group(1).replace("&amp;", "&")


def _five_dead_letters(client: redis.Redis) -> list[DeadLetter]:
    make_group(client)
    for n in range(5):
        add_dead_letter(
            client,
            queue=n % 2,
            offset=n,
            key=f"order-{n % 3}",
            error="RuntimeError: declined\nmore detail" if n < 4 else "KeyError: 'sku'",
            dead_at_ms=T0_MS + n * 1000,
        )
    sync_all(client)
    return list(DeadLetter.objects.order_by("offset"))


def test_it_pages_newest_first_with_a_cursor_and_comes_back_to_the_first_page(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    records = _five_dead_letters(redis_client)
    client.force_login(viewer)

    first = client.get("/groups/billing/dead-letters?limit=2").content.decode()
    second = client.get("/groups/billing/dead-letters" + _href(first, "next-page")).content.decode()
    third = client.get("/groups/billing/dead-letters" + _href(second, "next-page")).content.decode()

    newest_first = [r.pk for r in reversed(records)]
    assert _ids(first) + _ids(second) + _ids(third) == newest_first
    assert 'id="first-page"' not in first
    assert 'id="next-page"' not in third
    assert parse_qs(urlsplit(_href(third, "first-page")).query) == {"limit": ["2"]}
    assert 'id="count-waiting" data-value="5"' in first


def test_it_sorts_oldest_first_from_the_toggle(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    records = _five_dead_letters(redis_client)
    client.force_login(viewer)

    newest = client.get("/groups/billing/dead-letters?key=order-0").content.decode()
    oldest = client.get("/groups/billing/dead-letters" + _href(newest, "sort-toggle"))

    assert _ids(oldest.content.decode()) == [r.pk for r in records if r.key == "order-0"]
    assert "oldest first" in oldest.content.decode()
    assert oldest.context["data"]["form"]["key"] == "order-0"


def test_it_filters_and_keeps_the_filter_in_the_export_and_json_links(
    client: Client, operator: User, redis_client: redis.Redis
) -> None:
    records = _five_dead_letters(redis_client)
    records[0].move_to("discarded", actor="ops")
    client.force_login(operator)

    response = client.get("/groups/billing/dead-letters?queue=0&error=declined&status=dead")
    html = response.content.decode()

    assert _ids(html) == [records[2].pk]  # queue 0: offsets 0, 2, 4; 0 discarded; 4 KeyError
    assert 'id="count-waiting" data-value="1"' in html
    export = re.search(r'id="export-link" href="([^"]*)"', html)
    assert export is not None
    assert export.group(1).replace("&amp;", "&") == (
        "/api/v1/groups/billing/dead-letters.jsonl?queue=0&error=declined&status=dead"
    )
    assert (
        'href="/api/v1/groups/billing/dead-letters?queue=0&amp;error=declined&amp;status=dead"'
        in html
    )
    action_filter: dict[str, Any] = json.loads(
        re.search(r'<script id="dl-filter" type="application/json">(.*?)</script>', html).group(1)  # type: ignore[union-attr]
    )
    assert action_filter == {"queue": "0", "error": "declined", "status": "dead"}
    assert "RuntimeError: declined</td>" in html  # the error's first line only
    assert "more detail</td>" not in html


def test_it_counts_dead_letters_per_group_on_the_groups_page(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    records = _five_dead_letters(redis_client)
    make_group(redis_client, group="mailer")
    records[1].move_to("replayed", actor="ops")
    client.force_login(viewer)

    html = client.get("/dead-letters").content.decode()
    data = client.get("/api/v1/dead-letters").json()

    assert 'data-group="billing" data-waiting="4"' in html
    assert 'data-group="mailer" data-waiting="0"' in html
    assert data["groups"] == [
        {"group": "billing", "topics": ["orders"], "live": True, "waiting": 4, "total": 5},
        {"group": "mailer", "topics": ["orders"], "live": True, "waiting": 0, "total": 0},
    ]


def test_it_says_when_no_dead_letter_matches(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    _five_dead_letters(redis_client)
    client.force_login(viewer)

    html = client.get("/groups/billing/dead-letters?key=order-404").content.decode()

    assert "No dead letter matches these filters." in html
    assert _ids(html) == []
