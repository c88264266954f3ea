"""The committed offset on the queue and overview views is read from Redis (the overview's
through its fleet state, swept at the request without an ingester), not from stored
``offset_committed`` events: with commits recorded at most once per interval, the
views still show every commit as it happens."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.web.store.models import Event
from lockstep.workers import create_topic
from lockstep.workers import events as ev
from tests.dashboard.helpers import group_rows, produce
from tests.dashboard.scenarios import QUICK, FailOn, consuming, ingest_all
from tests.support import probe_until

pytestmark = pytest.mark.django_db

# Commit events ten minutes apart: every commit after the first waits for its interval.
SLOW_COMMIT_EVENTS = replace(QUICK, commit_event_interval_s=600)


def _get(client: Client, url: str) -> dict[str, Any]:
    response = client.get(url)
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def _stored_commits(client: redis.Redis) -> list[dict[str, Any]]:
    ingest_all(client)
    return list(Event.objects.filter(type=ev.OFFSET_COMMITTED).values_list("details", flat=True))


def test_it_shows_every_commit_while_the_commit_events_wait_for_their_interval(
    client: Client,
    viewer: User,
    redis_client: redis.Redis,
    redis_url: str,
) -> None:
    create_topic(redis_client, "orders", 1)
    client.force_login(viewer)
    handler = FailOn()

    with consuming(redis_url, "orders", "mailer", handler, timings=SLOW_COMMIT_EVENTS):
        sent = produce(redis_url, "orders", [f"order-{i}" for i in range(30)])
        probe_until(lambda: handler.count() == len(sent), lambda ok: ok)
        queue = probe_until(
            lambda: _get(client, "/api/v1/topics/orders/queues/0"),
            lambda d: d["groups"][0]["committed_offset"] == len(sent),
        )
        overview_rows = group_rows(client, "orders", "mailer")
        # Events reach the stream at the consumer's next flush (a loaded machine may not
        # have run it yet): every commit was made by now, so its event, if any, was made.
        stored = probe_until(lambda: _stored_commits(redis_client), bool)

    assert queue["groups"][0]["lag"] == 0
    assert overview_rows[0]["committed_offset"] == len(sent)
    # Only the first commit was written so far; the rest waits for its interval.
    assert [d["offset"] for d in stored] == [1]
