"""A dead letter's page: its body as pretty JSON, text or a hex dump with its size, its
headers, where it came from, every attempt with its traceback, its status history, the
messages parked behind it when it holds its key, and links to its queue and to the
replay that died again."""

from __future__ import annotations

import json
import re

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.deadletters.models import DeadLetter
from lockstep.workers import keys
from lockstep.workers.message import REPLAY_OF_HEADER
from lockstep.workers.refs import QueueRef
from tests.dashboard.deadletters.helpers import T0_MS, add_dead_letter, attempt, make_group, synced

pytestmark = pytest.mark.django_db


def _page(client: Client, record: DeadLetter) -> str:
    response = client.get(f"/groups/{record.group}/dead-letters/{record.pk}")
    assert response.status_code == 200
    return response.content.decode()


def _text(html: str, element_id: str) -> str:
    found = re.search(rf'id="{element_id}"[^>]*>(.*?)</', html, re.S)
    assert found, f"no #{element_id}"
    return found.group(1)


def test_it_shows_a_json_body_pretty_with_where_it_came_from(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    record = synced(
        redis_client,
        add_dead_letter(
            redis_client,
            queue=2,
            offset=41,
            key="order-7",
            body=b'{"order": 7}',
            headers={"source": "checkout", "tries": 2},
            reconsume_times=3,
            attempts=[
                attempt("RuntimeError: declined", T0_MS - 2000, "Traceback (first)"),
                attempt("RuntimeError: declined again", T0_MS - 1000, "Traceback (second)"),
            ],
        ),
    )
    client.force_login(viewer)

    html = _page(client, record)

    assert _text(html, "body-pretty") == "{\n  &quot;order&quot;: 7\n}"
    assert "12 bytes, json" in html
    assert 'href="/topics/orders/queues/2" id="queue-link"' in html
    assert "/messages?topic=orders&amp;queue=2&amp;offset=41" in html
    assert ">order-7</a>" in _text(html, "dl-key") + "</a>"
    assert '<td class="mono">source</td><td class="mono wrap">checkout</td>' in html
    assert '<td class="mono">tries</td><td class="mono wrap">2</td>' in html
    assert html.count('<li class="attempt">') == 2
    assert '<summary>Traceback</summary><pre class="traceback">Traceback (first)</pre>' in html
    assert "2026-11-21 10:30:00 UTC" in html  # dead-lettered at (T0_MS)
    assert 'class="history-row" data-status="dead"' in html
    assert 'id="dl-hold"' not in html


def test_it_shows_a_binary_body_as_a_hex_dump_with_its_size(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    record = synced(redis_client, add_dead_letter(redis_client, body=b"\xff" + bytes(range(1, 20))))
    client.force_login(viewer)

    html = _page(client, record)

    assert "20 bytes, binary" in html
    dump = re.search(r'<pre class="body-hex" id="body-hex">(.*?)</pre>', html, re.S)
    assert dump is not None
    lines = re.sub(r"<[^>]+>", "", dump.group(1)).splitlines()
    assert lines == [
        "00000000  ff 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f",
        "00000010  10 11 12 13",
    ]


def test_it_shows_a_text_body_as_text(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    record = synced(redis_client, add_dead_letter(redis_client, body="déclinée".encode()))
    client.force_login(viewer)

    html = _page(client, record)

    assert _text(html, "body-text") == "déclinée"


def test_it_shows_how_many_messages_are_parked_behind_a_dead_letter_holding_its_key(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    record = synced(redis_client, add_dead_letter(redis_client, key="order-9", offset=5))
    ref = QueueRef("orders", 0)
    hold = {"state": "held", "dlq_id": record.dlq_id, "offset": 5, "since": T0_MS}
    redis_client.hset(keys.parked_keys(ref, "billing"), "order-9", json.dumps(hold))
    redis_client.zadd(keys.parked_messages(ref, "billing", "order-9"), {"a": 6, "b": 7, "c": 9})
    client.force_login(viewer)

    html = _page(client, record)

    assert 'id="dl-hold" data-parked="3"' in html
    assert "<strong>3</strong> later messages of key <code>order-9</code> are parked" in html


def test_it_links_a_dead_letter_and_its_replay_that_died_again(
    client: Client, viewer: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    first = synced(redis_client, add_dead_letter(redis_client, offset=3))
    again = synced(
        redis_client,
        add_dead_letter(redis_client, offset=9, headers={REPLAY_OF_HEADER: first.dlq_id}),
    )
    client.force_login(viewer)

    first_html = _page(client, first)
    again_html = _page(client, again)

    assert f'href="/groups/billing/dead-letters/{again.pk}" class="dead-again-link"' in first_html
    assert 'data-status="dead_again"' in first_html
    assert f'href="/groups/billing/dead-letters/{first.pk}" id="replay-of-link"' in again_html


def test_it_offers_no_action_on_a_dead_letter_no_longer_waiting(
    client: Client, operator: User, redis_client: redis.Redis
) -> None:
    make_group(redis_client)
    record = synced(redis_client, add_dead_letter(redis_client))
    record.move_to("discarded", actor="ops", note="duplicate order")
    client.force_login(operator)

    html = _page(client, record)

    assert re.search(r'id="replay-one" disabled', html)
    assert re.search(r'id="discard-one" disabled', html)
    assert "Only a dead letter still waiting can be replayed or discarded." in html
    assert "duplicate order" in html
