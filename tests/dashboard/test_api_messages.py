"""GET /api/v1/messages (and the lookup page): messages by key or by (queue, offset), each
with its state per consumer group and its history."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.workers import create_topic
from lockstep.workers import events as ev
from lockstep.workers.config import AfterDlq, Ordering
from tests.dashboard.helpers import produce
from tests.dashboard.scenarios import FailOn, consuming, ingest_until
from tests.support import probe_until

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]


def _lookup(client: Client, query: str) -> dict[str, Any]:
    response = client.get(f"/api/v1/messages?{query}")
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def _states(found: dict[str, Any]) -> list[dict[str, str]]:
    """Per message (by offset): group -> state."""
    return [{s["group"]: s["state"] for s in m["states"]} for m in found["messages"]]


def test_it_answers_an_anonymous_visitor_with_401_json(client: Client) -> None:
    assert client.get("/api/v1/messages?topic=orders&key=k").status_code == 401


@pytest.mark.parametrize(
    ("query", "status", "error"),
    [
        ("key=order-1", 400, "topic is required"),
        ("topic=orders", 400, "give key, or queue and offset"),
        ("topic=orders&queue=0", 400, "give key, or queue and offset"),
        (
            "topic=orders&key=k&queue=0&offset=1",
            400,
            "give either key, or queue and offset, not both",
        ),
        ("topic=orders&queue=0&offset=-3", 400, "offset must be >= 0, got -3"),
        ("topic=payments&key=k", 404, "no topic 'payments'"),
        ("topic=orders&queue=9&offset=0", 404, "topic 'orders' has no queue 9 (0..0)"),
        (
            "topic=orders&queue=0&offset=5",
            404,
            "no message at offset 5 of orders queue 0 (max offset 0)",
        ),
    ],
)
def test_it_answers_bad_or_unknown_lookups_in_json(
    client: Client, viewer: User, redis_client: redis.Redis, query: str, status: int, error: str
) -> None:
    create_topic(redis_client, "orders", 1)
    client.force_login(viewer)

    response = client.get(f"/api/v1/messages?{query}")

    assert response.status_code == status
    assert response.json() == {"error": error}


def test_it_tells_handled_retrying_and_pending_apart(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 1)
    client.force_login(viewer)
    ok, poison, after = produce(redis_url, "orders", ["order-1", "order-poison", "order-2"])

    with consuming(
        redis_url, "orders", "mailer", FailOn("order-poison", error="card declined"), suspend_ms=20
    ):
        stuck = probe_until(
            lambda: _lookup(client, "topic=orders&key=order-poison"),
            lambda f: _states(f) == [{"mailer": "retrying"}],
        )
        ingest_until(redis_client, ev.CONSUME_FAILED)
        handled = _lookup(client, f"topic=orders&queue=0&offset={ok.offset}")
        pending = _lookup(client, f"topic=orders&queue=0&offset={after.offset}")
        by_offset = _lookup(client, f"topic=orders&queue=0&offset={poison.offset}")

    (message,) = stuck["messages"]
    assert (stuck["by"], stuck["queue"], stuck["key"]) == ("key", 0, "order-poison")
    assert (message["offset"], message["key"], message["body_preview"]) == (
        poison.offset,
        "order-poison",
        '{"step": "created"}',
    )
    (state,) = message["states"]
    assert state["retries"] >= 1 and "card declined" in state["error"]
    assert (handled["by"], handled["key"], _states(handled)) == (
        "offset",
        "order-1",
        [{"mailer": "handled"}],
    )
    assert _states(pending) == [{"mailer": "pending"}]
    assert pending["messages"][0]["states"][0]["ahead"] == 1
    assert {e["type"] for e in by_offset["history"]} >= {ev.CONSUME_FAILED}
    assert all(e["key"] == "order-poison" for e in by_offset["history"])


def test_it_shows_dead_lettered_and_parked_messages_per_group(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 1)
    client.force_login(viewer)
    produce(redis_url, "orders", ["order-poison"] * 3)
    auditor = FailOn()

    with (
        consuming(
            redis_url,
            "orders",
            "holder",
            FailOn("order-poison"),
            ordering=Ordering.KEY,
            max_reconsume_times=1,
            after_dlq=AfterDlq.HOLD,
            retry_initial_ms=20,
            retry_max_ms=40,
        ),
        consuming(redis_url, "orders", "auditor", auditor),
    ):
        found = probe_until(
            lambda: _lookup(client, "topic=orders&key=order-poison"),
            lambda f: (
                _states(f)
                == [
                    {"auditor": "handled", "holder": "dead_lettered"},
                    {"auditor": "handled", "holder": "parked"},
                    {"auditor": "handled", "holder": "parked"},
                ]
            ),
        )
        ingest_until(redis_client, ev.MESSAGES_PARKED)
        history = _lookup(client, "topic=orders&key=order-poison")["history"]

    dead = found["messages"][0]["states"][1]
    assert (dead["state"], dead["reconsume_times"], dead["dlq_id"] != "") == (
        "dead_lettered",
        1,
        True,
    )
    parked = found["messages"][1]["states"][1]
    assert {k: parked[k] for k in ("state", "hold", "blocked_by_offset")} == {
        "state": "parked",
        "hold": "held",
        "blocked_by_offset": 0,
    }
    assert [
        e["type"]
        for e in history
        if e["group"] == "holder"
        and e["type"] in {ev.DEAD_LETTERED, ev.KEY_PARKED, ev.MESSAGES_PARKED}
    ] == [ev.DEAD_LETTERED, ev.KEY_PARKED, ev.MESSAGES_PARKED]


def test_it_renders_the_lookup_form_and_results(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 1)
    produce(redis_url, "orders", ["order-1"])
    client.force_login(viewer)

    form = client.get("/messages")
    found = client.get("/messages?topic=orders&key=order-1")
    bad = client.get("/messages?topic=orders&queue=0")

    assert form.status_code == 200
    assert '<option value="orders"' in form.content.decode()
    assert found.status_code == 200
    assert 'class="message-row" data-offset="0" data-key="order-1"' in found.content.decode()
    assert bad.status_code == 400
    assert "give key, or queue and offset" in bad.content.decode()
