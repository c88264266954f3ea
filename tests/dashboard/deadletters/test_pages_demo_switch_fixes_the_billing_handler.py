"""The demo's switch on the billing group's dead-letter page: shown only there and only
when the demo billing handler is configured; an operator fixes or breaks the handler
with a CSRF-protected POST (the Redis flag ``demo_poison`` sets); a viewer gets 403 and
nothing changes."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.demo.handlers import FIXED_FLAG
from lockstep.workers.config import Subscription
from tests.dashboard.deadletters.helpers import make_group

pytestmark = pytest.mark.django_db

DEMO = Subscription("orders", "billing", "lockstep.dashboard.demo.handle_billing")


@pytest.fixture(autouse=True)
def demo_configured(settings: Any, redis_client: redis.Redis) -> None:
    settings.LOCKSTEP_SUBSCRIPTIONS = [DEMO]
    make_group(redis_client)
    make_group(redis_client, group="mailer")


def test_it_lets_an_operator_fix_and_break_the_demo_handler(
    operator: User, redis_client: redis.Redis
) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    page = client.get("/groups/billing/dead-letters")
    token = page.cookies["csrftoken"].value

    fixed = client.post("/demo/billing-handler", {"state": "fixed", "csrfmiddlewaretoken": token})
    fixed_page = client.get("/groups/billing/dead-letters").content.decode()
    broken = client.post("/demo/billing-handler", {"state": "broken", "csrfmiddlewaretoken": token})

    assert "billing handler is broken" in page.content.decode()
    assert 'id="demo-fix"' in page.content.decode()
    assert (fixed.status_code, fixed["Location"]) == (302, "/groups/billing/dead-letters")
    assert "billing handler is fixed" in fixed_page and 'id="demo-break"' in fixed_page
    assert broken.status_code == 302
    assert not redis_client.exists(FIXED_FLAG)


def test_it_refuses_a_viewer_and_a_post_without_csrf(
    viewer: User, operator: User, redis_client: redis.Redis
) -> None:
    as_viewer = Client(enforce_csrf_checks=True)
    as_viewer.force_login(viewer)
    token = as_viewer.get("/groups/billing/dead-letters").cookies["csrftoken"].value
    without_csrf = Client(enforce_csrf_checks=True)
    without_csrf.force_login(operator)

    refused = as_viewer.post(
        "/demo/billing-handler", {"state": "fixed", "csrfmiddlewaretoken": token}
    )
    forged = without_csrf.post("/demo/billing-handler", {"state": "fixed"})
    page = as_viewer.get("/groups/billing/dead-letters").content.decode()

    assert refused.status_code == 403
    assert forged.status_code == 403
    assert not redis_client.exists(FIXED_FLAG)
    assert "billing handler is broken" in page  # the viewer sees the state
    assert 'id="demo-fix"' not in page  # but no button


def test_it_shows_the_switch_only_on_the_billing_page_when_the_demo_is_configured(
    client: Client, operator: User, settings: Any
) -> None:
    client.force_login(operator)

    other_group = client.get("/groups/mailer/dead-letters").content.decode()
    settings.LOCKSTEP_SUBSCRIPTIONS = [Subscription("orders", "billing", "shop.handle")]
    not_configured = client.get("/groups/billing/dead-letters").content.decode()
    post = client.post("/demo/billing-handler", {"state": "fixed"})
    bad_get = client.get("/demo/billing-handler")

    assert 'id="demo-switch"' not in other_group
    assert 'id="demo-switch"' not in not_configured
    assert post.status_code == 404
    assert bad_get.status_code == 405


def test_it_refuses_an_unknown_state(client: Client, operator: User) -> None:
    client.force_login(operator)

    response = client.post("/demo/billing-handler", {"state": "melted"})

    assert response.status_code == 400
    assert "state must be fixed or broken" in response.content.decode()
