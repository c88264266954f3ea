"""The overview, group and queue pages lead to a group's dead letters with the count
waiting in Redis: the group's total, and per queue."""

from __future__ import annotations

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from tests.dashboard.deadletters.helpers import add_dead_letter, make_group
from tests.dashboard.helpers import get_json, group_rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def three_dead_letters(redis_client: redis.Redis) -> None:
    make_group(redis_client, queues=2)
    for offset in range(3):
        add_dead_letter(redis_client, queue=1, offset=offset)


@pytest.mark.usefixtures("three_dead_letters")
def test_it_links_the_group_total_and_each_queue_to_the_dead_letters(
    client: Client, viewer: User
) -> None:
    client.force_login(viewer)

    html = client.get("/topics/orders/groups/billing").content.decode()

    assert (
        '<a id="group-dead-letters" href="/groups/billing/dead-letters?topic=orders">3</a>' in html
    )
    assert '<a href="/groups/billing/dead-letters?topic=orders&amp;queue=1">3</a>' in html


@pytest.mark.usefixtures("three_dead_letters")
def test_it_counts_and_links_the_dead_letters_of_each_group_on_the_queue_page(
    client: Client, viewer: User
) -> None:
    client.force_login(viewer)

    page = client.get("/topics/orders/queues/1").content.decode()
    data = client.get("/api/v1/topics/orders/queues/1").json()

    assert '<a href="/groups/billing/dead-letters?topic=orders&amp;queue=1">3</a>' in page
    assert data["dead_letters"] == {"billing": 3}


@pytest.mark.usefixtures("three_dead_letters")
def test_it_gives_the_overview_script_the_dead_letter_address_and_counts(
    client: Client, viewer: User
) -> None:
    client.force_login(viewer)

    page = client.get("/").content.decode()
    summary = get_json(client, "/api/v1/overview")["summary"]
    rows = group_rows(client, "orders", "billing")

    assert 'data-dead-letters-url="/groups/GROUP/dead-letters"' in page
    assert '<a href="/groups/billing/dead-letters?topic=orders">3</a>' in page
    assert [(g["topic"], g["group"], g["dead_letters"]) for g in summary["groups"]] == [
        ("orders", "billing", 3)
    ]
    assert summary["totals"]["dead_letters"] == 3
    assert {q: r["dead_letters"] for q, r in rows.items()} == {0: 0, 1: 3}
