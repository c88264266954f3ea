"""A consumer group may be named ``billing/eu`` and a topic ``orders.v2%eu``: every page
and JSON view of that group answers, and every link the pages render to it leads back to
it (nothing stops at the "/")."""

from __future__ import annotations

import json
import re

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.deadletters.models import DeadLetter
from lockstep.dashboard.web.roles import OPERATOR, grant_role
from tests.dashboard.deadletters.helpers import add_dead_letter, make_group, synced

pytestmark = pytest.mark.django_db

TOPIC = "orders.v2%eu"
GROUP = "billing/eu"
TOPIC_IN_URL = "orders.v2%25eu"


@pytest.fixture
def record(redis_client: redis.Redis) -> DeadLetter:
    make_group(redis_client, topic=TOPIC, group=GROUP)
    return synced(redis_client, add_dead_letter(redis_client, topic=TOPIC, group=GROUP))


@pytest.fixture
def operator_client(client: Client, django_user_model: type[User]) -> Client:
    user = django_user_model.objects.create_user("operator", password="operator-password-1")
    grant_role(user, OPERATOR)
    client.force_login(user)
    return client


def _links(html: str) -> list[str]:
    return [
        link.replace("&amp;", "&")
        for link in re.findall(r'(?:href|action|data-actions-url)="(/[^"]*)"', html)
    ]


def test_it_answers_every_page_and_json_view_of_the_group(
    operator_client: Client, record: DeadLetter
) -> None:
    pages = [
        f"/topics/{TOPIC_IN_URL}/groups/{GROUP}",
        f"/groups/{GROUP}/dead-letters",
        f"/groups/{GROUP}/dead-letters/{record.pk}",
        f"/api/v1/topics/{TOPIC_IN_URL}/groups/{GROUP}",
        f"/api/v1/groups/{GROUP}/dead-letters",
        f"/api/v1/groups/{GROUP}/dead-letters.jsonl",
        f"/api/v1/groups/{GROUP}/dead-letters/{record.pk}",
        # As the overview's script builds them: each part encoded, "/" as %2F.
        f"/topics/{TOPIC_IN_URL}/groups/billing%2Feu",
        "/groups/billing%2Feu/dead-letters",
    ]
    for path in pages:
        response = operator_client.get(path)

        assert response.status_code == 200, path

    assert operator_client.get(pages[4]).json()["group"] == GROUP
    assert operator_client.get(pages[6]).json()["id"] == record.pk


def test_it_dry_runs_an_action_on_the_group(operator_client: Client, record: DeadLetter) -> None:
    response = operator_client.post(
        f"/api/v1/groups/{GROUP}/dead-letters/actions",
        json.dumps({"action": "replay", "ids": [record.pk], "dry_run": True}),
        content_type="application/json",
        headers={"X-CSRFToken": "unused"},
    )

    assert response.status_code == 200, response.content
    assert response.json()["count"] == 1


def test_it_renders_links_that_lead_back_to_the_group(
    operator_client: Client, record: DeadLetter
) -> None:
    sources = [
        "/dead-letters",
        f"/groups/{GROUP}/dead-letters",
        f"/groups/{GROUP}/dead-letters/{record.pk}",
        f"/topics/{TOPIC_IN_URL}/groups/{GROUP}",
    ]
    followed = set()
    for source in sources:
        html = operator_client.get(source).content.decode()
        for link in _links(html):
            if "billing" in link and "/static/" not in link:
                followed.add(link)

    assert f"/groups/{GROUP}/dead-letters" in followed
    assert f"/groups/{GROUP}/dead-letters/{record.pk}" in followed
    for link in followed:
        if link.endswith("/actions"):
            continue  # POST only: dry-run above
        assert operator_client.get(link).status_code == 200, link
