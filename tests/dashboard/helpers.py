"""Helpers for the dashboard tests: drive the real runtime (topic, producer, consumer)
and wait for what it does to show up."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode

from django.test import Client

from lockstep.workers import Consumer, ConsumeStatus, Producer, SendResult, Subscription
from lockstep.workers.message import ConsumeContext, Message

HANDLER = "tests.dashboard.helpers.recorded"
# The most rows a table page holds (``web.store.fleet_read.MAX_PER_PAGE``).
ROWS_PER_READ = 100


class Recorder:
    """A handler that remembers every (queue, offset) it handled successfully."""

    def __init__(self) -> None:
        self.handled: set[tuple[int, int]] = set()
        self._lock = threading.Lock()

    def __call__(self, messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
        with self._lock:
            self.handled.update((m.queue, m.offset) for m in messages)
        return ConsumeStatus.SUCCESS

    def count(self) -> int:
        with self._lock:
            return len(self.handled)


@contextmanager
def running_consumer(redis_url: str, topic: str, group: str) -> Iterator[tuple[Consumer, Recorder]]:
    """One in-process consumer of ``group``; stopped (queues finished and unlocked) after."""
    recorder = Recorder()
    consumer = Consumer(
        redis_url, [Subscription(topic, group, handler=HANDLER)], handlers={HANDLER: recorder}
    )
    consumer.start()
    try:
        yield consumer, recorder
    finally:
        consumer.stop()


def produce(redis_url: str, topic: str, keys: Iterable[str]) -> list[SendResult]:
    producer = Producer(redis_url)
    try:
        return [producer.send(topic, key, b'{"step": "created"}') for key in keys]
    finally:
        producer.close()


def per_queue(results: Iterable[SendResult]) -> Counter[int]:
    """How many of ``results`` went to each queue."""
    return Counter(r.queue for r in results)


def point_celery_at(url: str) -> None:
    """The dashboard's Celery app sends to ``url``, with nothing of the last broker left:
    ``app.close()`` keeps the producer pool when the app's connection pool was never
    made, and a send after it went through that pool to the last broker (an earlier
    test's, on this worker)."""
    from lockstep.dashboard.celery import app

    app.close()
    amqp: Any = app.amqp  # the stubs do not declare the pool's attribute
    amqp._producer_pool = None
    app.conf.update(broker_url=url)


def get_json(client: Client, url: str) -> dict[str, Any]:
    """GET ``url`` as ``client``: the JSON of a 200 answer (anything else fails)."""
    response = client.get(url)
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def overview_rows(client: Client, **filters: str) -> list[dict[str, Any]]:
    """Every row of the overview's table that ``filters`` (``topic``, ``group``, ``state``,
    ``owner``) keep, in the table's order (by topic, group, queue): GET /api/v1/overview
    page by page."""
    rows: list[dict[str, Any]] = []
    page = 1
    while True:
        query = urlencode({**filters, "per_page": ROWS_PER_READ, "page": page})
        table = get_json(client, f"/api/v1/overview?{query}")["table"]
        rows += table["rows"]
        if table["page"] >= table["pages"]:
            return rows
        page += 1


def group_rows(client: Client, topic: str, group: str) -> dict[int, dict[str, Any]]:
    """queue -> the overview's row of (``topic``, ``group``, that queue), every queue of
    the group (``overview_rows``)."""
    return {r["queue"]: r for r in overview_rows(client, topic=topic, group=group)}


def summary_group(overview: dict[str, Any], topic: str, group: str) -> dict[str, Any]:
    """The overview summary's line of (``topic``, ``group``); it must be there once."""
    (found,) = [
        g for g in overview["summary"]["groups"] if (g["topic"], g["group"]) == (topic, group)
    ]
    return dict(found)


def row_id(topic: str, group: str, queue: int) -> str:
    """A table row's id in the overview socket's messages, written as the page's script
    writes the ids of the rows it has (``JSON.stringify``: no spaces), which it must
    match."""
    return json.dumps([topic, group, queue], separators=(",", ":"))
