"""Helpers for the replay/discard tests: dead letters of many keys, what Redis holds after
an action (re-published messages, dead-letter streams), and JSON POSTs."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis
from django.test import Client

from lockstep.dashboard import celery_app
from lockstep.workers import keys
from lockstep.workers.config import AfterDlq, Ordering
from lockstep.workers.message import REPLAY_OF_HEADER, Message, decode_entry
from lockstep.workers.redis_types import entries
from lockstep.workers.refs import QueueRef
from tests.dashboard.deadletters.helpers import T0_MS, add_dead_letter, make_group
from tests.dashboard.helpers import point_celery_at

TOPIC, GROUP = "orders", "billing"
ACTIONS_PATH = f"/api/v1/groups/{GROUP}/dead-letters/actions"


def fill(
    client: redis.Redis,
    *,
    keys_count: int,
    per_key: int,
    queues: int = 4,
    after_dlq: AfterDlq = AfterDlq.CONTINUE,
    ordering: Ordering = Ordering.KEY,
    seed: int = 7,
) -> dict[str, list[int]]:
    """``per_key`` dead letters for each of ``keys_count`` keys (key ``k`` on queue ``k % queues``,
    keys interleaved on each queue), written to their streams in a shuffled order, so
    only a replay that sorts them keeps each key's order. Returns key -> its offsets."""
    make_group(client, TOPIC, GROUP, queues)
    letters = []
    next_offset = [0] * queues
    for _ in range(per_key):
        for k in range(keys_count):
            queue = k % queues
            letters.append((queue, next_offset[queue], f"order-{k}"))
            next_offset[queue] += 1
    random.Random(seed).shuffle(letters)
    for n, (queue, offset, key) in enumerate(letters):
        add_dead_letter(
            client,
            queue=queue,
            offset=offset,
            key=key,
            ordering=ordering,
            after_dlq=after_dlq,
            dead_at_ms=T0_MS + n,
        )
    by_key: dict[str, list[int]] = {}
    for _, offset, key in sorted(letters, key=lambda x: (x[0], x[1])):
        by_key.setdefault(key, []).append(offset)
    return by_key


def replayed_messages(client: redis.Redis, queues: int = 4) -> list[Message]:
    """Every re-published replay in the topic's queue streams, in stream order per queue."""
    found = []
    for q in range(queues):
        ref = QueueRef(TOPIC, q)
        for entry_id, fields in entries(client.xrange(keys.stream(ref))):
            message = decode_entry(ref, entry_id, fields)
            if REPLAY_OF_HEADER in message.headers:
                found.append(message)
    return found


def original_offsets_by_key(messages: list[Message]) -> dict[str, list[int]]:
    """Key -> the ``lockstep-original-offset`` of its re-published messages, in the order
    they stand in the queue stream."""
    by_key: dict[str, list[int]] = {}
    for m in messages:
        by_key.setdefault(m.key, []).append(int(m.headers["lockstep-original-offset"]))
    return by_key


def dead_letters_in_redis(client: redis.Redis, queues: int = 4) -> int:
    return sum(
        int(client.xlen(keys.dead_letters(QueueRef(TOPIC, q), GROUP))) for q in range(queues)
    )


def post(client: Client, path: str, body: dict[str, Any], **extra: Any) -> Any:
    return client.post(path, data=json.dumps(body), content_type="application/json", **extra)


@contextmanager
def celery_broker(redis_url: str) -> Iterator[None]:
    """Celery's broker on the suite's Redis (where no worker listens) for the duration:
    a large request's task is queued there, and the test delivers it by calling the task.
    Without this the web side's broker is the settings' default, a Redis the suite did
    not start."""
    before = celery_app.conf.broker_url
    point_celery_at(redis_url)
    try:
        yield
    finally:
        point_celery_at(before)


def queued_tasks(client: redis.Redis) -> list[dict[str, Any]]:
    """The task messages waiting in the dashboard's queue (LOCKSTEP_CELERY_QUEUE, a Redis
    list)."""
    queue = celery_app.conf.task_default_queue
    return [json.loads(raw)["headers"] for raw in client.lrange(queue, 0, -1)]
