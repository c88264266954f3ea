"""403, 404, 500 and a refused CSRF token answer a page in the dashboard's layout (its
stylesheet, its top bar, a link back), the 500 page without a request context or a
database; under /api/ they stay JSON. /favicon.ico leads to the dashboard's icon."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client, RequestFactory
from django.urls import get_resolver

from lockstep.dashboard.web.errors import forbidden

LAYOUT = ('href="/static/lockstep.css"', 'class="brand"', 'href="/" id="back-link"')


def _in_layout(html: str) -> None:
    for part in LAYOUT:
        assert part in html, part


@pytest.mark.django_db
def test_it_answers_an_unknown_address_with_the_404_page(client: Client, viewer: User) -> None:
    client.force_login(viewer)

    response = client.get("/no/such/page")

    assert response.status_code == 404
    assert response.templates[0].name == "404.html"
    _in_layout(response.content.decode())
    assert client.get("/api/v1/no/such").json() == {"error": "there is no page at this address"}


@pytest.mark.django_db
def test_it_answers_a_forbidden_page_with_the_403_page(viewer: User) -> None:
    handler = get_resolver().resolve_error_handler(403)
    request = RequestFactory().get("/alerts")
    request.user = viewer
    assert handler is forbidden
    page = forbidden(request, PermissionError("you may not do this"))
    assert page.status_code == 403
    assert "you may not do this" in page.content.decode()
    assert 'rel="icon"' in page.content.decode()
    _in_layout(page.content.decode())


def test_it_renders_the_500_page_without_a_database_or_a_request_context() -> None:
    """No ``django_db`` mark: any query here fails the test."""
    handler = get_resolver().resolve_error_handler(500)

    page = handler(RequestFactory().get("/topics/orders/queues/1"))
    api = handler(RequestFactory().get("/api/v1/overview"))

    assert page.status_code == 500
    html = page.content.decode()
    _in_layout(html)
    assert "Server error" in html
    assert api.status_code == 500
    assert api["Content-Type"] == "application/json"


@pytest.mark.django_db
def test_it_answers_a_stale_csrf_token_with_a_page_that_says_what_to_do(
    viewer: User,
) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(viewer)

    response = client.post(
        "/alerts/silences/new", {"comment": "x"}, HTTP_REFERER="http://testserver/alerts/silences"
    )
    api = client.post("/api/v1/analytics/runs", {})

    assert response.status_code == 403
    html = response.content.decode()
    assert response.templates[0].name == "403_csrf.html"
    _in_layout(html)
    assert "send the form again" in html
    assert 'href="http://testserver/alerts/silences"' in html
    assert api.status_code in (401, 403)
    assert api["Content-Type"] == "application/json"


@pytest.mark.django_db
def test_it_leads_favicon_ico_to_the_dashboards_icon(client: Client) -> None:
    response = client.get("/favicon.ico")

    assert response.status_code == 301
    assert response["Location"] == "/static/favicon.svg"
