"""Dead letters written as the runtime writes them (the fields of
``workers.broker.dead_letter_entry`` plus ``dead_at``), at chosen coordinates and times."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis

from lockstep.dashboard.deadletters.models import DeadLetter
from lockstep.dashboard.deadletters.sync import sync_all
from lockstep.workers import keys
from lockstep.workers.broker import dead_letter_entry
from lockstep.workers.config import AfterDlq, Ordering, Subscription
from lockstep.workers.message import FailedAttempt, Message
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import create_topic, register_group

T0_MS = 1_795_257_000_000  # a fixed "now" for dead-letter times


def make_group(
    client: redis.Redis, topic: str = "orders", group: str = "billing", queues: int = 4
) -> None:
    create_topic(client, topic, queues)
    register_group(client, topic, group)


def add_dead_letter(
    client: redis.Redis,
    *,
    topic: str = "orders",
    group: str = "billing",
    queue: int = 0,
    offset: int = 0,
    key: str = "order-1",
    body: bytes = b'{"step": "paid"}',
    headers: dict[str, Any] | None = None,
    error: str = "RuntimeError: payment service unavailable",
    reconsume_times: int = 3,
    attempts: Sequence[FailedAttempt] = (),
    ordering: Ordering = Ordering.KEY,
    after_dlq: AfterDlq = AfterDlq.HOLD,
    dead_at_ms: int = T0_MS,
) -> str:
    """XADD one dead letter; returns its stream entry ID (the dlq id)."""
    message = Message(
        topic, queue, offset, key, body, headers or {}, (dead_at_ms - 5000) / 1000, reconsume_times
    )
    sub = Subscription(topic, group, handler="h", ordering=ordering, after_dlq=after_dlq)
    fields: dict[Any, Any] = {
        **dead_letter_entry(message, sub, error, attempts),
        "dead_at": dead_at_ms,
    }
    entry_id = client.xadd(keys.dead_letters(QueueRef(topic, queue), group), fields)
    return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)


def synced(client: redis.Redis, dlq_id: str) -> DeadLetter:
    sync_all(client)
    return DeadLetter.objects.get(dlq_id=dlq_id)


def attempt(error: str, at_ms: int = T0_MS, traceback: str = "") -> FailedAttempt:
    return {"at_ms": at_ms, "error": error, "traceback": traceback}
