"""The dead-letter pages: login required; a viewer reads everything but gets no replay or
discard control (and no body when bodies are hidden from viewers); an operator gets them;
the navigation leads to them."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from tests.dashboard.deadletters.helpers import add_dead_letter, make_group, synced

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]

ACTION_CONTROLS = (
    'id="replay-selected"',
    'id="replay-matching"',
    'id="discard-selected"',
    'class="select-row"',
    'id="action-dialog"',
    "deadletters/actions.js",
)
DETAIL_CONTROLS = ('id="replay-one"', 'id="discard-one"', 'id="action-dialog"')


def _pages(redis_client: redis.Redis) -> list[str]:
    make_group(redis_client)
    record = synced(redis_client, add_dead_letter(redis_client, body=b'{"card": "4111"}'))
    return [
        "/dead-letters",
        "/groups/billing/dead-letters",
        f"/groups/billing/dead-letters/{record.pk}",
        "/audit",
    ]


def test_it_sends_an_anonymous_visitor_to_the_login_form(
    client: Client, redis_client: redis.Redis
) -> None:
    for path in _pages(redis_client):
        response = client.get(path)

        assert response.status_code == 302, path
        assert response["Location"].startswith("/login/?next="), path


def test_it_renders_every_page_for_a_viewer_with_the_navigation_marking_it(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    client.force_login(viewer)

    for path in _pages(redis_client):
        html = client.get(path).content.decode()

        assert 'href="/dead-letters"' in html and 'href="/audit"' in html, path
        assert html.count('aria-current="page"') == 1, path


def test_it_shows_a_viewer_the_list_and_a_dead_letter_without_action_controls(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    _list, detail = _pages(redis_client)[1:3]
    client.force_login(viewer)

    list_html = client.get("/groups/billing/dead-letters").content.decode()
    detail_html = client.get(detail).content.decode()

    assert 'class="dead-letter-row"' in list_html
    for control in ACTION_CONTROLS:
        assert control not in list_html, control
    for control in DETAIL_CONTROLS:
        assert control not in detail_html, control
    assert "&quot;card&quot;: &quot;4111&quot;" in detail_html  # bodies are not hidden


def test_it_shows_an_operator_the_action_controls(
    client: Client, operator: User, redis_client: redis.Redis
) -> None:
    _list, detail = _pages(redis_client)[1:3]
    client.force_login(operator)

    list_html = client.get("/groups/billing/dead-letters").content.decode()
    detail_html = client.get(detail).content.decode()

    for control in ACTION_CONTROLS:
        assert control in list_html, control
    for control in DETAIL_CONTROLS:
        assert control in detail_html, control
    assert 'data-actions-url="/api/v1/groups/billing/dead-letters/actions"' in list_html
    assert 'name="csrfmiddlewaretoken"' in list_html


def test_it_hides_bodies_and_headers_from_a_viewer_when_configured(
    client: Client, viewer: User, operator: User, redis_client: redis.Redis, settings: Any
) -> None:
    settings.LOCKSTEP_HIDE_BODIES_FROM_VIEWERS = True
    make_group(redis_client)
    record = synced(
        redis_client,
        add_dead_letter(redis_client, body=b'{"card": "4111"}', headers={"email": "a@b.c"}),
    )
    path = f"/groups/billing/dead-letters/{record.pk}"

    client.force_login(viewer)
    as_viewer = client.get(path).content.decode()
    client.force_login(operator)
    as_operator = client.get(path).content.decode()

    assert 'id="body-hidden"' in as_viewer
    assert "4111" not in as_viewer and "a@b.c" not in as_viewer
    assert 'id="dl-headers"' not in as_viewer
    assert "4111" in as_operator and "a@b.c" in as_operator
    assert 'id="body-hidden"' not in as_operator
