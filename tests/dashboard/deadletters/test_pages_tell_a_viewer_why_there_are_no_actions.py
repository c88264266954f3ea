"""Where an operator has the replay, discard or acknowledge controls, a viewer reads why
they are missing (the operator role) instead of finding nothing; an operator does not
read that note."""

from __future__ import annotations

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from lockstep.dashboard.alerts.models import Alert
from tests.dashboard.deadletters.helpers import add_dead_letter, make_group, synced

pytestmark = pytest.mark.django_db

NOTE = "You can view but not act"


def _pages(redis_client: redis.Redis) -> list[str]:
    make_group(redis_client)
    record = synced(redis_client, add_dead_letter(redis_client))
    alert = Alert.objects.create(
        rule="queue_stuck", fingerprint="fp", summary="orders q1 is stuck", since=timezone.now()
    )
    return [
        "/groups/billing/dead-letters",
        f"/groups/billing/dead-letters/{record.pk}",
        f"/alerts/{alert.pk}",
    ]


def test_it_tells_a_viewer_that_acting_needs_the_operator_role(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    client.force_login(viewer)

    for path in _pages(redis_client):
        html = client.get(path).content.decode()

        assert 'id="no-actions-note"' in html, path
        assert NOTE in html and "operator role" in html, path


def test_it_shows_an_operator_the_controls_without_the_note(
    client: Client, operator: User, redis_client: redis.Redis
) -> None:
    client.force_login(operator)

    for path in _pages(redis_client):
        assert NOTE not in client.get(path).content.decode(), path
