"""GET /metrics: the Prometheus text format (rendered by prometheus_client) without login,
parsed back by a strict little parser, with values checked against a hand-built Redis state
and hand-written events."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import pytest
import redis
from django.test import Client
from prometheus_client import CONTENT_TYPE_LATEST

from lockstep.dashboard.monitor.ingest import Ingester
from lockstep.dashboard.monitor.tasks import prune_events
from lockstep.dashboard.web.store.models import Event
from lockstep.workers import create_topic, keys
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]

SAMPLE = re.compile(
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})? "
    r"(?P<value>[-+]?(?:[0-9.]+(?:e[-+]?[0-9]+)?|Inf|NaN))$"
)
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')
HELP_OR_TYPE = re.compile(r"^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$")

Labels = frozenset[tuple[str, str]]


@dataclass
class Family:
    type: str = ""
    help: str = ""
    samples: dict[Labels, float] = field(default_factory=dict)


def _unescape(value: str) -> str:
    return re.sub(r"\\([\\\"n])", lambda m: "\n" if m[1] == "n" else m[1], value)


def _labels(text: str | None) -> Labels:
    if not text:
        return frozenset()
    found, pos = [], 0
    while pos < len(text):
        match = LABEL.match(text, pos)
        assert match, f"bad label set at {text[pos:]!r}"
        found.append((match[1], _unescape(match[2])))
        pos = match.end()
    return frozenset(found)


def parse(text: str) -> dict[str, Family]:
    """Families by name. Strict: HELP and TYPE before a family's samples, samples of one
    family together, no duplicate series, a final newline."""
    assert text.endswith("\n")
    families: dict[str, Family] = {}
    current = ""
    for line in text.splitlines():
        meta = HELP_OR_TYPE.match(line)
        if meta:
            kind, name, rest = meta.groups()
            family = families.setdefault(name, Family())
            assert not family.samples, f"{kind} of {name} after its samples"
            if kind == "TYPE":
                assert rest in {"counter", "gauge"}
                family.type = rest
            else:
                family.help = rest
            current = name
            continue
        sample = SAMPLE.match(line)
        assert sample, f"not a sample line: {line!r}"
        assert sample["name"] == current, f"{sample['name']} outside its family"
        labels = _labels(sample["labels"])
        assert labels not in families[current].samples, f"duplicate series {line!r}"
        families[current].samples[labels] = float(sample["value"])
    return families


def value_of(families: dict[str, Family], name: str, **labels: object) -> float:
    return families[name].samples[frozenset((k, str(v)) for k, v in labels.items())]


def _redis_now_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def _build_state(client: redis.Redis) -> int:
    """orders (2 queues), groups mailer and auditor. Queue 0: 10 produced, mailer committed
    4 and holds the lock (token 7); the oldest unconsumed message (offset 4) was produced
    3 s ago. Queue 1: 2 produced and committed by mailer, 2 messages of key k parked.
    Returns Redis time (ms) when built."""
    create_topic(client, "orders", 2)
    register_group(client, "orders", "mailer")
    register_group(client, "orders", "auditor")
    now = _redis_now_ms(client)
    q0, q1 = QueueRef("orders", 0), QueueRef("orders", 1)
    client.set(keys.sequence(q0), 10)
    for offset in range(10):
        client.xadd(
            keys.stream(q0),
            {"k": "k", "b": "x", "h": "{}", "t": now - 3000 + offset},
            id=f"{offset}-1",
        )
    client.hset(keys.offset(q0, "mailer"), mapping={"committed": 4, "token": 7})
    client.hset(
        keys.lock(q0, "mailer"),
        mapping={"owner": "host@1@abc", "token": 7, "expires_at": now + 60_000, "granted_at": now},
    )
    client.set(keys.sequence(q1), 2)
    client.hset(keys.offset(q1, "mailer"), mapping={"committed": 2, "token": 3})
    client.hset(keys.parked_keys(q1, "mailer"), "k", json.dumps({"state": "held"}))
    client.zadd(
        keys.parked_messages(q1, "mailer", "k"),
        {
            json.dumps({"o": 5, "k": "k", "t": now - 1000}): 5,
            json.dumps({"o": 6, "k": "k", "t": now - 500}): 6,
        },
    )
    card = {"subscriptions": [{"topic": "orders", "group": "mailer"}], "heartbeat_at_ms": now}
    client.set(keys.consumer_info("host@1@abc"), json.dumps(card))
    client.sadd(keys.CONSUMERS, "host@1@abc")
    return now


def _write_events(client: redis.Redis) -> None:
    def add(type_: str, topic: str = "orders", queue: int = 0, **details: object) -> None:
        client.xadd(
            keys.EVENTS,
            {
                "type": type_,
                "ts": 1,
                "topic": topic,
                "group": "mailer",
                "queue": queue,
                "details": json.dumps(details),
            },
        )

    for _ in range(3):
        add("lock_acquired")
    add("consume_failed", offsets=[4, 5])
    add("consume_failed", offsets=[4])
    add("dead_lettered", offset=4)
    add("malformed_entry", offset=9, reason="missing field 'k'")
    add("fencing_rejected", queue=1)
    add("lock_acquired", topic='we"ird\\topic\nname')
    add("offset_committed")  # counted nowhere


def test_it_answers_without_login_in_the_text_format(client: Client) -> None:
    response = client.get("/metrics")

    assert response.status_code == 200
    assert response["Content-Type"] == CONTENT_TYPE_LATEST
    assert response["Content-Type"].startswith("text/plain; version=")
    families = parse(response.content.decode())
    assert families["lockstep_consume_retries_total"].type == "counter"
    assert families["lockstep_queue_lag_messages"].type == "gauge"


def test_it_reports_the_numbers_of_a_constructed_case(
    client: Client, redis_client: redis.Redis
) -> None:
    built_at = _build_state(redis_client)
    _write_events(redis_client)
    ingester = Ingester(redis_client)
    while ingester.run_once(block_ms=0):
        pass

    before = _redis_now_ms(redis_client)
    families = parse(client.get("/metrics").content.decode())
    after = _redis_now_ms(redis_client)

    q0 = {"topic": "orders", "group": "mailer", "queue": 0}
    q1 = {"topic": "orders", "group": "mailer", "queue": 1}
    assert value_of(families, "lockstep_queue_max_offset", topic="orders", queue=0) == 10
    assert value_of(families, "lockstep_queue_max_offset", topic="orders", queue=1) == 2
    assert value_of(families, "lockstep_queue_committed_offset", **q0) == 4
    assert value_of(families, "lockstep_queue_lag_messages", **q0) == 6
    lag_s = value_of(families, "lockstep_queue_lag_seconds", **q0)
    produced = built_at - 3000 + 4
    assert (before - produced) / 1000 - 0.002 <= lag_s <= (after - produced) / 1000 + 0.002
    assert value_of(families, "lockstep_queue_lock_token", **q0) == 7
    assert value_of(families, "lockstep_queue_owned", **q0) == 1
    assert value_of(families, "lockstep_queue_owned", **q1) == 0
    assert value_of(families, "lockstep_queue_parked_messages", **q1) == 2
    assert value_of(families, "lockstep_queue_lag_messages", **q1) == 2
    assert (
        value_of(families, "lockstep_queue_lag_messages", topic="orders", group="auditor", queue=0)
        == 10
    )
    assert value_of(families, "lockstep_consumers", topic="orders", group="mailer") == 1
    assert value_of(families, "lockstep_consumers", topic="orders", group="auditor") == 0
    assert value_of(families, "lockstep_lock_owner_changes_total", **q0) == 3
    assert (
        value_of(
            families,
            "lockstep_lock_owner_changes_total",
            topic='we"ird\\topic\nname',
            group="mailer",
            queue=0,
        )
        == 1
    )
    assert value_of(families, "lockstep_consume_retries_total", **q0) == 3, "one per message"
    assert value_of(families, "lockstep_dead_letters_total", **q0) == 2
    assert value_of(families, "lockstep_fencing_rejections_total", **q1) == 1
    assert families["lockstep_events_lost_total"].samples == {frozenset(): 0}
    assert families["lockstep_event_stream_gaps_total"].samples == {frozenset(): 0}


def test_its_counters_never_go_down_when_old_events_are_pruned(
    client: Client, redis_client: redis.Redis, settings: object
) -> None:
    _build_state(redis_client)
    _write_events(redis_client)  # stamped 1970: far older than any retention
    ingester = Ingester(redis_client)
    while ingester.run_once(block_ms=0):
        pass
    before = parse(client.get("/metrics").content.decode())

    pruned = prune_events()
    _write_events(redis_client)
    while ingester.run_once(block_ms=0):
        pass
    after = parse(client.get("/metrics").content.decode())

    assert pruned == 10 and Event.objects.count() == 10
    for name in (
        "lockstep_lock_owner_changes_total",
        "lockstep_consume_retries_total",
        "lockstep_dead_letters_total",
        "lockstep_fencing_rejections_total",
    ):
        assert {k: 2 * v for k, v in before[name].samples.items()} == after[name].samples
