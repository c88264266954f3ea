"""The audit page and the events page show the newest entries first and page back through
all history with "older" / "newer" links (keyset cursors, filters kept): an entry added
while someone pages does not shift the page they go to, and every entry is reached once."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from lockstep.dashboard.deadletters.models import AuditEntry
from tests.dashboard.scenarios import ingest_all, write_event

pytestmark = pytest.mark.django_db

T0_MS = 1_795_257_000_000


def _link(html: str, element_id: str) -> str | None:
    found = re.search(rf'<a id="{element_id}" href="([^"]*)"', html)
    return found.group(1).replace("&amp;", "&") if found else None


def _audit(n: int, first: int = 0) -> None:
    start = timezone.now() - timedelta(hours=1)
    for i in range(first, first + n):
        AuditEntry.objects.create(
            at=start + timedelta(minutes=i), actor=f"actor-{i}", action="replay", group="billing"
        )


def _actors(html: str) -> list[str]:
    return re.findall(r'data-actor="(actor-\d+)"', html)


def test_the_audit_page_pages_back_through_every_entry(client: Client, viewer: User) -> None:
    _audit(7)
    client.force_login(viewer)

    first = client.get("/audit?group=billing&limit=3").content.decode()
    _audit(1, first=7)  # a newer entry arrives while the reader pages back: it shifts nothing
    second = client.get("/audit" + (_link(first, "older-page") or "?none")).content.decode()
    third = client.get("/audit" + (_link(second, "older-page") or "?none")).content.decode()
    back = client.get("/audit" + (_link(third, "newer-page") or "?none")).content.decode()

    assert _actors(first) == ["actor-6", "actor-5", "actor-4"]
    assert _actors(second) == ["actor-3", "actor-2", "actor-1"]
    assert _actors(third) == ["actor-0"]
    assert _link(third, "older-page") is None
    assert _actors(back) == ["actor-3", "actor-2", "actor-1"]
    assert "group=billing" in (_link(second, "older-page") or "")


def _events(client: redis.Redis, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        write_event(client, "offset_committed", T0_MS + i, topic="orders", group="g", key=f"k{i}")
    ingest_all(client)


def _keys(html: str) -> list[str]:
    return re.findall(r">(k\d+)<", html)


def test_the_events_page_pages_back_through_every_event(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    _events(redis_client, 7)
    client.force_login(viewer)

    first = client.get("/events?topic=orders&limit=3").content.decode()
    _events(redis_client, 1, start=7)
    older = _link(first, "older-page") or "?none"
    second = client.get("/events" + older).content.decode()
    third = client.get("/events" + (_link(second, "older-page") or "?none")).content.decode()
    newer = client.get("/events" + (_link(third, "newer-page") or "?none")).content.decode()
    api = client.get("/api/v1/events" + older).json()

    assert _keys(first) == ["k6", "k5", "k4"]
    assert _keys(second) == ["k3", "k2", "k1"]
    assert _keys(third) == ["k0"]
    assert _link(third, "older-page") is None
    assert _keys(newer) == ["k3", "k2", "k1"]
    assert "topic=orders" in older
    assert "monitor/events.js" not in second  # an earlier page is not live
    assert [e["key"] for e in api["events"]] == ["k1", "k2", "k3"]
