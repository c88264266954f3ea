"""Every URL pattern the resolver knows, asked for by an anonymous visitor with GET: a page
redirects to a login form, a JSON endpoint answers 401/403 JSON. Only the login forms,
/metrics (its own bearer token) and static files are open. The patterns are read from the
resolver, so a route added later is checked without touching this test."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve

pytestmark = pytest.mark.django_db

# Open on purpose: the login forms themselves, and /metrics (bearer token, tested in
# test_metrics_requires_the_bearer_token.py). Static files are served by the ASGI static
# handler in front of Django, so they are not URL patterns at all.
# /favicon.ico only redirects to the (open) static icon.
OPEN = {"login/", "admin/login/", "metrics", "favicon.ico"}
# Logging out needs no login: an anonymous visitor's GET is refused (POST only) or sent
# back to the admin's index, which sends it to the login form.
LOGOUTS = {"logout/": 405, "admin/logout/": 302}


def routes(patterns: list[URLPattern | URLResolver], prefix: str = "") -> Iterator[str]:
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from routes(p.url_patterns, prefix + str(p.pattern))
        else:
            yield prefix + str(p.pattern)


def sample_path(route: str) -> str:
    """A concrete path the route matches: converters become "1", a regex group takes its
    first alternative (admin's app labels) or "1"."""
    path = re.sub(r"\(\?P<\w+>([\w-]+)(?:\|[^)]*)?\)", r"\1", route)
    path = re.sub(r"\(\?P<\w+>[^)]*\)", "1", path)
    path = re.sub(r"<(?:\w+:)?\w+>", "1", path)
    return "/" + path.replace("^", "").replace("$", "").replace("\\Z", "")


ALL_ROUTES = sorted(set(routes(get_resolver().url_patterns)))


def test_it_knows_the_dashboards_routes() -> None:
    """The enumeration finds pages, JSON endpoints and the admin: it is not vacuous."""
    assert {"", "api/v1/overview", "alerts/<str:alert_id>", "metrics"} <= set(ALL_ROUTES)
    assert sum(r.startswith("admin/") for r in ALL_ROUTES) > 20


@pytest.mark.parametrize("route", [r for r in ALL_ROUTES if r not in OPEN])
def test_it_refuses_an_anonymous_get(client: Client, route: str) -> None:
    path = sample_path(route)
    assert resolve(path).route == route.replace("^", ""), f"{path} does not reach {route}"

    response = client.get(path)

    if route in LOGOUTS:
        assert response.status_code == LOGOUTS[route]
    elif route.startswith("api/"):
        if response.status_code == 405:  # POST-only (docs/dead-letters.md §6): the POST must ask
            response = client.post(path, {}, content_type="application/json")
        assert response.status_code in (401, 403), (path, response.status_code)
        assert response["Content-Type"].startswith("application/json")
        assert "error" in response.json()
    else:
        assert response.status_code == 302, (path, response.status_code)
        login = "/admin/login/" if route.startswith("admin/") else "/login/"
        assert response["Location"].startswith(f"{login}?next="), response["Location"]


@pytest.mark.parametrize("route", sorted(OPEN - {"metrics", "favicon.ico"}))
def test_it_shows_the_login_forms(client: Client, route: str) -> None:
    response = client.get(sample_path(route))
    assert response.status_code == 200
    assert 'name="password"' in response.content.decode()
