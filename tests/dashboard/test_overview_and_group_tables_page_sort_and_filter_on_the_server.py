"""The overview's and the group page's tables of queues are paged (at most 100 rows),
sorted and filtered on the server, in the HTML page and its JSON twin alike; links keep
the view; bad parameters are a 400 naming each field."""

from __future__ import annotations

import re
from html import unescape
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from tests.dashboard.fleets import make_fleet

pytestmark = [pytest.mark.django_db, pytest.mark.on_postgres]


def _lag(topic: str, queue: int) -> int:
    """A lag per queue that differs everywhere: sorting has something to show."""
    return (queue * 7) % 23 + (100 if topic == "payments" else 0)


@pytest.fixture
def fleet(redis_client: redis.Redis) -> int:
    return make_fleet(redis_client, ["orders", "payments"], 60, ["billing", "mailer"], _lag)


def _json(client: Client, url: str) -> dict[str, Any]:
    response = client.get(url)
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def _cells(rows: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(r["topic"], r["group"], r["queue"]) for r in rows]


def test_it_pages_the_overview_table_at_most_a_hundred_rows(
    client: Client, viewer: User, fleet: int
) -> None:
    client.force_login(viewer)

    first = _json(client, "/api/v1/overview?per_page=100")
    last = _json(client, "/api/v1/overview?per_page=100&page=3")

    assert fleet == 240
    assert (first["table"]["total"], first["table"]["pages"]) == (240, 3)
    assert len(first["table"]["rows"]) == 100
    assert len(last["table"]["rows"]) == 40
    every = _cells(first["table"]["rows"]) + _cells(
        _json(client, "/api/v1/overview?per_page=100&page=2")["table"]["rows"]
    )
    every += _cells(last["table"]["rows"])
    assert len(set(every)) == 240


def test_a_page_past_the_end_shows_the_last_page(client: Client, viewer: User, fleet: int) -> None:
    client.force_login(viewer)

    body = _json(client, "/api/v1/overview?per_page=50&page=99")

    assert body["table"]["page"] == body["table"]["pages"] == 5
    assert len(body["table"]["rows"]) == 40


def test_it_sorts_by_lag_across_topics_and_groups(client: Client, viewer: User, fleet: int) -> None:
    client.force_login(viewer)

    down = _json(client, "/api/v1/overview?sort=lag&order=desc&per_page=30")["table"]["rows"]
    up = _json(client, "/api/v1/overview?sort=lag&order=asc&per_page=30")["table"]["rows"]

    lags = [r["lag"] for r in down]
    assert lags == sorted(lags, reverse=True)
    assert lags[0] == max(_lag("payments", q) for q in range(60))
    assert [r["lag"] for r in up] == sorted(r["lag"] for r in up)
    assert up[0]["lag"] == 0


def test_it_filters_by_topic_group_and_state(client: Client, viewer: User, fleet: int) -> None:
    client.force_login(viewer)

    body = _json(client, "/api/v1/overview?topic=payments&group=mailer&state=unowned")
    nothing = _json(client, "/api/v1/overview?state=consuming")

    assert body["table"]["total"] == 60
    assert {(r["topic"], r["group"], r["state"]) for r in body["table"]["rows"]} == {
        ("payments", "mailer", "unowned")
    }
    assert body["table"]["filters"] == {
        "topic": "payments",
        "group": "mailer",
        "state": "unowned",
        "owner": "",
    }
    assert nothing["table"]["total"] == 0


def test_the_group_page_pages_and_sorts_its_own_queues(
    client: Client, viewer: User, fleet: int
) -> None:
    client.force_login(viewer)

    body = _json(client, "/api/v1/topics/orders/groups/billing?sort=lag&order=desc&per_page=10")

    assert {(r["topic"], r["group"]) for r in body["queues"]} == {("orders", "billing")}
    assert len(body["queues"]) == 10
    assert (body["table"]["total"], body["table"]["pages"]) == (60, 6)
    lags = [r["lag"] for r in body["queues"]]
    assert lags == sorted(lags, reverse=True)
    assert lags[0] == max(_lag("orders", q) for q in range(60))
    assert body["totals"]["lag"] == sum(_lag("orders", q) for q in range(60))


def test_bad_parameters_are_a_400_naming_each_field(
    client: Client, viewer: User, fleet: int
) -> None:
    client.force_login(viewer)
    query = "sort=colour&order=up&page=0&per_page=500&state=sleepy"

    api = client.get(f"/api/v1/overview?{query}")
    page = client.get(f"/?{query}")
    group = client.get(f"/api/v1/topics/orders/groups/billing?{query}")

    assert api.status_code == page.status_code == group.status_code == 400
    assert set(api.json()["problems"]) == {"sort", "order", "page", "per_page", "state"}
    assert set(group.json()["problems"]) == {"sort", "order", "page", "per_page", "state"}
    text = page.content.decode()
    for field in ("sort", "order", "page", "per_page", "state"):
        assert f"{field}:" in text


def test_the_pages_links_keep_the_view(client: Client, viewer: User, fleet: int) -> None:
    client.force_login(viewer)

    html = client.get("/?topic=orders&sort=lag&order=desc&per_page=25").content.decode()
    group_html = client.get(
        "/topics/orders/groups/mailer?sort=lag&order=desc&per_page=25"
    ).content.decode()

    rows = re.findall(r'<tr class="queue-row[^"]*" data-topic="([^"]+)"', html)
    assert rows and set(rows) == {"orders"} and len(rows) == 25
    following = _link(html, "next-page")
    assert following == {
        "topic": ["orders"],
        "sort": ["lag"],
        "order": ["desc"],
        "per_page": ["25"],
        "page": ["2"],
    }
    by_owner = _sort_link(html, "owner")
    assert (by_owner["topic"], by_owner["sort"], by_owner["per_page"]) == (
        ["orders"],
        ["owner"],
        ["25"],
    )
    flipped = _sort_link(html, "lag")
    assert (flipped["sort"], flipped.get("order", ["asc"])) == (["lag"], ["asc"])
    assert _link(group_html, "next-page") == {
        "sort": ["lag"],
        "order": ["desc"],
        "per_page": ["25"],
        "page": ["2"],
    }
    assert group_html.count('<tr class="group-queue') == 25


def _link(html: str, element_id: str) -> dict[str, list[str]]:
    found = re.search(rf'id="{element_id}" href="([^"]+)"', html)
    assert found, f"no #{element_id}"
    return parse_qs(urlsplit(unescape(found.group(1))).query)


def _sort_link(html: str, column: str) -> dict[str, list[str]]:
    found = re.search(rf'data-sort="{column}" href="([^"]+)"', html)
    assert found, f"no sort link for {column}"
    return parse_qs(urlsplit(unescape(found.group(1))).query)
