"""Unknown alerts, silences, overrides and channels, and parameters that cannot be used,
get the error page with a clear message and a 4xx status: never a 500."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("/alerts?state=burning", 400, "state must be one of"),
        ("/alerts?rule=no_such_rule", 400, "rule must be one of"),
        ("/alerts?severity=mild", 400, "severity must be one of"),
        ("/alerts?page=0", 400, "page must be a whole number from 1"),
        ("/alerts?page=x", 400, "page must be a whole number from 1"),
        ("/alerts?page=9", 404, "there is no page 9"),
        ("/alerts?q=" + "x" * 300, 400, "q is longer than 200 characters"),
        ("/alerts/999", 404, "no alert #999"),
        ("/alerts/abc", 404, "no alert &#x27;abc&#x27;"),
        ("/alerts/channels/999", 404, "no channel #999"),
    ],
)
def test_it_renders_the_error_page_for_bad_get_requests(
    client: Client, admin_user: User, path: str, status: int, message: str
) -> None:
    client.force_login(admin_user)

    response = client.get(path)

    assert response.status_code == status
    assert message in response.content.decode()
    assert '<section class="panel error-page"' in response.content.decode()


@pytest.mark.parametrize(
    ("path", "form", "status", "message"),
    [
        ("/alerts/999/acknowledge", {}, 404, "no alert #999"),
        ("/alerts/1x/unacknowledge", {}, 404, "no alert &#x27;1x&#x27;"),
        ("/alerts/silences/77/end", {}, 404, "no silence #77"),
        ("/alerts/rules/77/delete", {}, 404, "no override #77"),
        ("/alerts/rules/save", {"rule": "nope"}, 400, "rule must be one of"),
        ("/alerts/channels/5/test", {}, 404, "no channel #5"),
        ("/alerts/channels/new", {"name": "x", "kind": "pigeon"}, 400, "kind must be one of"),
    ],
)
def test_it_renders_the_error_page_for_bad_posts(
    client: Client, admin_user: User, path: str, form: dict[str, str], status: int, message: str
) -> None:
    client.force_login(admin_user)

    response = client.post(path, form)

    assert response.status_code == status
    assert message in response.content.decode()


def test_it_answers_a_get_to_an_action_with_405(client: Client, admin_user: User) -> None:
    client.force_login(admin_user)

    assert client.get("/alerts/silences/new").status_code == 405
