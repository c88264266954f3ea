"""Every page and JSON endpoint, found through the URL resolver, answers hostile input
(numbers beyond 2^63, negative, float and non-numeric offsets, queues, limits, pages and
cursors; unknown topics, groups and ids; injection strings, NUL bytes, very long strings,
non-UTF-8 percent-encodings) in its path and its query string, for an anonymous visitor
and for each role, with a 2xx/3xx or a 4xx that says what was wrong: ``{"error": ...}``
under ``/api/``, the error page elsewhere. Never a 500: the test client re-raises a
view's exception, so a 500 fails here with its traceback."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockstep.dashboard.alerts.models import Alert, Channel, RuleSetting, Silence
from lockstep.workers import create_topic
from lockstep.workers.topics import register_group
from tests.dashboard.deadletters.conftest import admin_user, operator, viewer
from tests.dashboard.deadletters.helpers import T0_MS, add_dead_letter, synced
from tests.dashboard.helpers import produce
from tests.dashboard.scenarios import ingest_all, write_event

if TYPE_CHECKING:  # the test client's response type exists only in django-stubs
    from django.test.client import _MonkeyPatchedWSGIResponse as Response

__all__ = ["admin_user", "operator", "viewer"]  # the role fixtures, shared

pytestmark = pytest.mark.django_db

# Django's admin is Django's own (and tested there); everything else of ours is fuzzed.
NOT_OURS = ("admin/",)
# Django's auth views and the Prometheus scrape endpoint (plain text, for machines) answer
# a wrong method with a bare 405 and its Allow header, which says all there is to say.
BARE_ANSWERS = {"login/", "logout/", "metrics"}

FORGED_CURSOR = base64.urlsafe_b64encode(b"-dead_at|0|99999999999999999999999").decode()
HOSTILE = [
    "-1",
    "0",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "-9223372036854775809",
    "1" * 400,
    "1.5",
    "1e3",
    "-0.0",
    "nan",
    "inf",
    "0x10",
    "²",  # isdigit() says yes, int() says no
    "\uff11\uff12",  # full-width digits
    "٣",
    " 7 ",
    "",
    "nobody",
    "'; DROP TABLE monitor_event; --",
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "{{7*7}}",
    "{% debug %}",
    "../../etc/passwd",
    "a\x00b",
    "\x00",
    "x" * 5000,
    "😀",
    "0-0",
    "99999999999999999999-99999999999999999999",
    "1-0",
    FORGED_CURSOR,
    "-dead_at",
    "2026-02-30",
    "99999-01-01",
    "-99999999999999999",
]
# Percent-encodings that are not UTF-8, or not percent-encodings at all: put in as is.
RAW = ["%FF", "%C3%28", "%E2%82", "%zz", "%", "%00", "%2F", "a%2F..%2F..", "%FE%FF"]
PARAMS = [
    "topic",
    "group",
    "queue",
    "key",
    "offset",
    "limit",
    "after",
    "type",
    "minutes",
    "status",
    "since",
    "until",
    "sort",
    "cursor",
    "error",
    "page",
    "state",
    "rule",
    "severity",
    "q",
    "actor",
    "action",
    "next",
]
REAL = ["orders", "mailer", "billing", "0", "1", "3"]
FORM_FIELDS = [
    "note",
    "snooze_until",
    "topic",
    "group",
    "rule",
    "reason",
    "minutes",
    "ends_at",
    "everything",
    "name",
    "kind",
    "target",
    "secret",
    "format",
    "enabled",
    "state",
    "param_seconds",
]
BODY_FIELDS = ["action", "request_id", "ids", "filter", "reason", "dry_run"]


@dataclass(frozen=True)
class Route:
    template: str  # "topics/<str:topic>/groups/<path:group>"

    @property
    def slots(self) -> list[str]:
        return re.findall(r"<(?:\w+:)?(\w+)>", self.template)

    def path(self, segments: dict[str, str]) -> str:
        return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: segments[str(m[1])], self.template)


def every_route() -> list[Route]:
    """Every route of ``dashboard.urls`` but Django's admin, as the resolver has them."""
    found: list[Route] = []

    def walk(patterns: list[Any], prefix: str) -> None:
        for p in patterns:
            route = prefix + str(p.pattern)
            if isinstance(p, URLResolver):
                if not route.startswith(NOT_OURS):
                    walk(p.url_patterns, route)
            elif isinstance(p, URLPattern):
                found.append(Route(route))

    walk(get_resolver().url_patterns, "")
    return found


ROUTES = every_route()
SLOTS = sorted({slot for route in ROUTES for slot in route.slots})


# ---- the world the requests land in ---------------------------------------------------


@pytest.fixture
def world(redis_client: redis.Redis, redis_url: str) -> None:
    """A topic with messages, two groups, stored events, a dead letter, an alert, a
    channel, a silence and a rule override: real things behind the ids and names."""
    create_topic(redis_client, "orders", 4)
    register_group(redis_client, "orders", "mailer")
    register_group(redis_client, "orders", "billing")
    produce(redis_url, "orders", ["order-1", "order-2", "order-3"])
    write_event(
        redis_client, "lock_acquired", T0_MS, topic="orders", group="mailer", queue=0, token=1
    )
    ingest_all(redis_client)
    synced(redis_client, add_dead_letter(redis_client))
    Alert.objects.create(
        rule="queue_stuck", fingerprint="f", severity="critical", summary="s", since=_now()
    )
    Channel.objects.create(name="ops", kind="email", target="ops@example.com")
    Silence.objects.create(topic="orders", ends_at=_now())
    RuleSetting.objects.create(rule="lag_high", topic="orders")


def _now() -> Any:
    from django.utils import timezone

    return timezone.now()


@pytest.fixture
def clients(world: None, viewer: User, operator: User, admin_user: User) -> dict[str, Client]:
    """One client per persona, signed in once (hypothesis reuses them across examples)."""
    out = {"anonymous": Client()}
    for name, user in (("viewer", viewer), ("operator", operator), ("admin", admin_user)):
        out[name] = Client()
        out[name].force_login(user)
    return out


# ---- what every answer must be --------------------------------------------------------


def assert_clear_answer(route: Route, path: str, response: Response) -> None:
    status = response.status_code
    where = f"{response.request['REQUEST_METHOD']} {path[:300]!r}"
    assert status < 500, f"{where} answered {status}"
    if status < 400:
        return
    if route.template in BARE_ANSWERS:
        assert status == 405 and response.has_header("Allow"), f"{where}: {status}"
        return
    content_type = response.get("Content-Type", "")
    if path.startswith("/api/"):
        assert content_type.startswith("application/json"), f"{where}: {content_type}"
        error = json.loads(response.content)["error"]
        assert isinstance(error, str) and error, where
    else:
        assert content_type.startswith("text/html"), f"{where}: {content_type}"
        # The error page, or a form's page again with its errors (status 400 only).
        html = response.content.decode()
        said = 'class="error-message"' in html or (status == 400 and 'class="form-error' in html)
        assert said, f"{where}: {status}"


def query_string(pairs: list[tuple[str, str]], raw: list[str]) -> str:
    parts = [f"{quote(name, safe='')}={quote(value, safe='')}" for name, value in pairs]
    parts += [f"{name}={value}" for name, value in zip(PARAMS, raw, strict=False)]
    return "&".join(parts)


def request(
    client: Client, route: Route, segments: dict[str, str], query: str, method: str, body: Any
) -> None:
    path = route.path(segments)
    url = f"{path}?{query}" if query else path
    if method == "GET":
        response = client.get(url)
    elif isinstance(body, bytes):
        response = client.generic("POST", url, body, content_type="application/json")
    else:
        response = client.post(url, body)
    assert_clear_answer(route, path, response)


# ---- every route, every hostile value, deterministically -------------------------------


def _segment(value: str) -> str:
    return quote(value, safe="")


def sweep(route: Route) -> Iterator[tuple[dict[str, str], str]]:
    """Each hostile value in each path slot (the other slots real), then as every known
    query parameter at once, then the raw percent-encodings."""
    real = {slot: "orders" if slot == "topic" else "1" for slot in route.slots}
    real.update({"group": "billing"} if "group" in real else {})
    for slot in route.slots:
        for value in HOSTILE:
            yield {**real, slot: _segment(value) or "%20"}, ""
        for value in RAW:
            yield {**real, slot: value}, ""
    for value in HOSTILE:
        yield real, query_string([(name, value) for name in PARAMS], [])
    for value in RAW:
        yield real, query_string([], [value] * len(PARAMS))


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.template or "/")
def test_it_answers_every_hostile_value_in_every_slot_of_every_route(
    clients: dict[str, Client], route: Route
) -> None:
    client = clients["operator"]
    for segments, query in sweep(route):
        request(client, route, segments, query, "GET", None)
        request(client, route, segments, query, "POST", {"note": "x", "state": "fixed"})


def test_it_finds_every_page_and_endpoint_it_fuzzes() -> None:
    templates = {r.template for r in ROUTES}
    # One of each family, so a resolver walk that lost an include would fail here.
    for expected in (
        "",
        "api/v1/topics/<str:topic>/queues/<str:queue>",
        "api/v1/groups/<path:group>/dead-letters/actions",
        "groups/<path:group>/dead-letters/<str:record_id>",
        "alerts/channels/<str:channel_id>/test",
        "api/v1/analytics/report",
        "metrics",
    ):
        assert expected in templates
    assert not any(t.startswith("admin/") for t in templates)


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/messages?topic=orders&key=order%001",
        "/api/v1/events?key=%00",
        "/api/v1/audit?actor=%00",
        "/api/v1/groups/bill%00ing/dead-letters",
        "/api/v1/groups/bill%00ing/dead-letters/1",
        "/groups/billing/dead-letters?key=%00",
        "/alerts?topic=%00",
    ],
)
def test_it_refuses_nul_characters_which_postgresql_cannot_compare(
    clients: dict[str, Client], url: str
) -> None:
    response = clients["viewer"].get(url)

    assert response.status_code == 400
    if url.startswith("/api/"):
        assert "must not contain NUL characters" in response.json()["error"]
    else:
        assert "must not contain NUL characters" in response.content.decode()


# ---- random combinations, every persona, GET and POST ----------------------------------

text_values = st.one_of(
    st.sampled_from(HOSTILE + REAL),
    st.text(max_size=40),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats().map(str),
)
segment_values = st.one_of(text_values.map(_segment).filter(bool), st.sampled_from(RAW))
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**80), 2**80), st.floats(), text_values),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text_values, inner, max_size=3),
    max_leaves=8,
)
json_bodies = st.one_of(
    st.dictionaries(st.sampled_from(BODY_FIELDS), json_values, max_size=6),
    json_values,
).map(lambda v: json.dumps(v).encode())
bodies = st.one_of(
    st.dictionaries(st.sampled_from(FORM_FIELDS), text_values, max_size=8),
    json_bodies,
    st.sampled_from([b"\xff\xfe", b"{", b"[]", b'{"ids": [99999999999999999999999]}']),
)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    route=st.sampled_from(ROUTES),
    segments=st.dictionaries(
        st.sampled_from(SLOTS),
        st.one_of(st.sampled_from(REAL), segment_values),
    ),
    pairs=st.lists(st.tuples(st.sampled_from(PARAMS), text_values), max_size=6),
    raw=st.lists(st.sampled_from(RAW), max_size=2),
    who=st.sampled_from(["anonymous", "viewer", "operator", "admin"]),
    method=st.sampled_from(["GET", "POST"]),
    body=bodies,
)
def test_it_answers_random_hostile_requests_from_every_persona(
    clients: dict[str, Client],
    route: Route,
    segments: dict[str, str],
    pairs: list[tuple[str, str]],
    raw: list[str],
    who: str,
    method: str,
    body: Any,
) -> None:
    filled = {slot: segments.get(slot, "1") for slot in route.slots}
    request(clients[who], route, filled, query_string(pairs, raw), method, body)
