"""A count of one reads in the singular ("1 queue", "1 message of 1 key", "1 dead letter"),
any other in the plural, on the pages, in the command's text and in the pages' scripts
(``count.js``)."""

from __future__ import annotations

import json

import pytest
import redis
from django.contrib.auth.models import User
from django.template import loader
from django.test import Client

from lockstep.dashboard.deadletters.management.commands.dlq import _describe_plan
from lockstep.workers import keys
from lockstep.workers.message import Message, serialize
from lockstep.workers.refs import QueueRef
from tests.dashboard.deadletters.helpers import make_group

pytestmark = pytest.mark.django_db


def _hold_one_key(client: redis.Redis) -> None:
    """Key order-1 of billing on orders/0 held, with one message parked behind it."""
    ref = QueueRef("orders", 0)
    hold = {"state": "held", "dlq_id": "1-0", "offset": 3, "since": 1_795_257_000_000}
    client.hset(keys.parked_keys(ref, "billing"), "order-1", json.dumps(hold))
    parked = Message("orders", 0, 4, "order-1", b"{}", {}, 1_795_257_000.0, 0)
    client.zadd(keys.parked_messages(ref, "billing", "order-1"), {serialize(parked): 4})


def test_it_says_one_queue_and_one_message_of_one_key(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client, queues=1)
    _hold_one_key(redis_client)
    client.force_login(viewer)

    overview = client.get("/").content.decode()
    group = client.get("/topics/orders/groups/billing").content.decode()

    assert '<span data-total="queues" data-noun="queue-group">1 queue-group</span> in' in overview
    assert '<span data-total="groups" data-noun="group">1 group</span> ·' in overview
    assert "· 1 row</span>" in overview
    assert "1 message of 1 key<" in group


def test_it_says_one_failed_attempt_and_one_minute_when_locked_out() -> None:
    html = loader.render_to_string(
        "registration/locked_out.html", {"failure_limit": 1, "cooloff_minutes": 1}
    )

    assert "after 1 failed attempt:" in html and "in 1 minute." in html


def test_it_says_one_dead_letter_of_one_key_in_the_commands_plan() -> None:
    data = {
        "action": "replay",
        "count": 1,
        "key_count": 1,
        "skipped_reasons": [],
        "queues": [],
        "keys": [],
        "order_notes": [],
    }

    assert _describe_plan(data)[0] == "would replay 1 dead letter of 1 key"
    assert _describe_plan({**data, "count": 2, "key_count": 2})[0] == (
        "would replay 2 dead letters of 2 keys"
    )


def test_the_scripts_count_helper_is_loaded_by_every_page_that_writes_counts(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client, queues=1)
    client.force_login(viewer)

    for path in ("/", "/topics/orders/queues/0"):
        assert "/static/count.js" in client.get(path).content.decode(), path
