"""What a message carried (key, body, headers, error, traceback) and what an operator
typed (an audit reason) is shown as text on every page, never as markup."""

from __future__ import annotations

import re

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.deadletters.models import AuditEntry
from tests.dashboard.deadletters.helpers import add_dead_letter, attempt, make_group, synced

pytestmark = pytest.mark.django_db

EVIL = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def _scripts(html: str) -> list[str]:
    """Every <script> element's opening tag, to compare with the page's own."""
    return re.findall(r"<script\b[^>]*>", html)


def test_it_escapes_keys_bodies_headers_errors_and_tracebacks(
    client: Client, operator: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    record = synced(
        redis_client,
        add_dead_letter(
            redis_client,
            key=f"order-{EVIL}",
            body=f'{{"note": "{EVIL}"}}'.encode(),
            headers={EVIL: EVIL},
            error=f"RuntimeError: {EVIL}",
            attempts=[attempt(f"RuntimeError: {EVIL}", traceback=f"Traceback: {EVIL}")],
        ),
    )
    text_body = synced(redis_client, add_dead_letter(redis_client, offset=1, body=EVIL.encode()))
    client.force_login(operator)

    pages = [
        client.get("/groups/billing/dead-letters").content.decode(),
        client.get(f"/groups/billing/dead-letters/{record.pk}").content.decode(),
        client.get(f"/groups/billing/dead-letters/{text_body.pk}").content.decode(),
    ]

    for html in pages:
        assert EVIL not in html
        assert all("alert(" not in tag for tag in _scripts(html))
    listed, detail, text = pages
    assert f"order-{ESCAPED}" in listed and f"RuntimeError: {ESCAPED}" in listed
    assert f"Traceback: {ESCAPED}" in detail
    assert detail.count(ESCAPED) >= 5  # key, body (pretty and as sent), header, error
    assert ESCAPED in text


def test_it_escapes_a_filter_given_in_the_address(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    client.force_login(viewer)

    html = client.get("/groups/billing/dead-letters", {"key": EVIL, "error": EVIL}).content.decode()

    assert EVIL not in html
    assert f'value="{ESCAPED}"' in html


def test_it_escapes_audit_entries(client: Client, viewer: User) -> None:
    AuditEntry.objects.create(
        actor="ops", action="discard", group="billing", reason=EVIL, count=1, selection=[1]
    )
    client.force_login(viewer)

    html = client.get("/audit").content.decode()

    assert EVIL not in html
    assert ESCAPED in html
