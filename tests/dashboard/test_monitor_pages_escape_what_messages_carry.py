"""What a message carried (its key, body and headers, and the events naming it) is shown
as text on the message lookup, queue and events pages, never as markup: script tags and
attribute breakouts come out escaped, and NUL or non-UTF-8 bytes do not break the page
(a NUL is passed on as text, which browsers show as U+FFFD)."""

from __future__ import annotations

import re

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.workers import Producer, create_topic
from lockstep.workers.topics import register_group
from tests.dashboard.scenarios import ingest_all, redis_now_ms, write_event

pytestmark = pytest.mark.django_db

EVIL = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
BREAKOUT = '"><img src=x onerror=alert(1)>'
KEY = f"order-{EVIL}{BREAKOUT}\x00"
BODY = f'{{"note": "{EVIL}", "x": "{BREAKOUT}"}}'.encode() + b"\x00\xff\xfe"


def _scripts(html: str) -> list[str]:
    """Every <script> element's opening tag, to compare with the page's own."""
    return re.findall(r"<script\b[^>]*>", html)


def _assert_inert(html: str) -> None:
    assert EVIL not in html
    assert BREAKOUT not in html
    assert "<img" not in html
    assert html.rstrip().endswith("</html>")  # NUL and non-UTF-8 bytes did not cut it short
    assert all("alert(" not in tag for tag in _scripts(html))


@pytest.fixture
def hostile(redis_client: redis.Redis, redis_url: str) -> int:
    """A message with a hostile key, body and headers in topic ``orders``, and an event
    about it; returns its queue."""
    create_topic(redis_client, "orders", 4)
    register_group(redis_client, "orders", "mailer")
    producer = Producer(redis_url)
    try:
        sent = producer.send("orders", KEY, BODY, headers={EVIL: BREAKOUT})
    finally:
        producer.close()
    write_event(
        redis_client,
        "consume_failed",
        redis_now_ms(redis_client),
        topic="orders",
        group="mailer",
        queue=sent.queue,
        key=KEY,
        consumer=EVIL,
        details={"error": f"RuntimeError: {EVIL}{BREAKOUT}", "offsets": [sent.offset]},
    )
    ingest_all(redis_client)
    return sent.queue


def test_it_escapes_the_message_lookup_by_key_and_by_offset(
    client: Client, viewer: User, hostile: int
) -> None:
    client.force_login(viewer)

    by_key = client.get("/messages", {"topic": "orders", "key": KEY})
    by_offset = client.get("/messages", {"topic": "orders", "queue": str(hostile), "offset": "0"})

    assert by_offset.status_code == 200
    html = by_offset.content.decode()
    _assert_inert(html)
    assert ESCAPED in html  # the body preview and the event's key, as text
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    assert by_key.status_code == 400  # a key with NUL is refused (PostgreSQL)
    _assert_inert(by_key.content.decode())


def test_it_escapes_the_queue_page(client: Client, viewer: User, hostile: int) -> None:
    client.force_login(viewer)

    response = client.get(f"/topics/orders/queues/{hostile}")

    assert response.status_code == 200
    html = response.content.decode()
    _assert_inert(html)
    assert ESCAPED in html  # the event row's key and consumer


def test_it_escapes_the_events_page(client: Client, viewer: User, hostile: int) -> None:
    client.force_login(viewer)

    response = client.get("/events", {"topic": "orders"})

    assert response.status_code == 200
    html = response.content.decode()
    _assert_inert(html)
    assert ESCAPED in html
