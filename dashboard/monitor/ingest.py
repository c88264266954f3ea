"""The ingester: Redis event stream → database, then hints through Channels.

Contract: events are stored in batches, each batch in one transaction together with the
cursor (the last stream ID stored), so a restart resumes right after the last stored
batch; the unique ``stream_id`` makes a replayed batch store nothing twice. Channel-layer
messages are only hints carrying a snapshot and a sequence number: pages treat a gap as
"re-read the JSON view".
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime
from typing import Any

import redis
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from dashboard.monitor.models import Event, IngestCursor
from workers import keys
from workers.events import decode_event
from workers.inspect import overview
from workers.redis_types import xread_entries

log = logging.getLogger(__name__)

CURSOR = "events"
OVERVIEW_GROUP = "overview"
# Push at least this often even without events: production moves lag without events.
IDLE_PUSH_SECONDS = 2.0


def read_cursor() -> str:
    cursor, _ = IngestCursor.objects.get_or_create(name=CURSOR)
    return cursor.last_id


def store_batch(entries: list[tuple[bytes, dict[bytes, bytes]]]) -> int:
    """Store one batch and advance the cursor atomically; returns how many were new."""
    if not entries:
        return 0
    rows = [_row(decode_event(entry_id, raw)) for entry_id, raw in entries]
    last_id = entries[-1][0].decode()
    ids = [r.stream_id for r in rows]
    with transaction.atomic():
        known = set(Event.objects.filter(stream_id__in=ids).values_list("stream_id", flat=True))
        Event.objects.bulk_create([r for r in rows if r.stream_id not in known],
                                  ignore_conflicts=True, batch_size=500)
        IngestCursor.objects.update_or_create(name=CURSOR, defaults={"last_id": last_id})
    return len(rows) - len(known)


def _row(event: dict[str, Any]) -> Event:
    return Event(
        stream_id=event["id"],
        type=event["type"][:40],
        ts=datetime.fromtimestamp(event["ts_ms"] / 1000.0, tz=UTC),
        topic=event["topic"][:128],
        group=event["group"][:128],
        queue=event["queue"],
        key=event["key"][:256],
        token=event["token"],
        consumer=event["consumer"][:200],
        details=event["details"],
    )


class Ingester:
    def __init__(self, client: redis.Redis, *, batch: int = 1000,
                 push_interval: float = 0.5) -> None:
        self.client = client
        self.batch = batch
        self.push_interval = push_interval
        self.seq = 0
        self.stored = 0
        self._dirty = False
        self._last_push = 0.0

    def run_once(self, block_ms: int = 200) -> int:
        """Read and store one batch after the cursor; returns how many entries were read."""
        last_id = read_cursor()
        reply = self.client.xread({keys.EVENTS: last_id}, count=self.batch, block=block_ms)
        entries = xread_entries(reply)
        if entries:
            self.stored += store_batch(entries)
            self._dirty = True
        return len(entries)

    def maybe_push(self) -> bool:
        now = time.monotonic()
        due = now - self._last_push >= (self.push_interval if self._dirty else IDLE_PUSH_SECONDS)
        if not due:
            return False
        self.push()
        return True

    def push(self) -> None:
        self._last_push = time.monotonic()
        self._dirty = False
        self.seq += 1
        layer = get_channel_layer()
        if layer is None:
            return
        message = {"type": "overview.update", "seq": self.seq, "data": overview(self.client)}
        try:
            async_to_sync(layer.group_send)(OVERVIEW_GROUP, message)
        except Exception:  # the channel layer is best effort; pages resync from JSON
            log.warning("channel layer unavailable; overview push skipped", exc_info=True)

    def run_forever(self, stop: threading.Event) -> None:
        backoff = 0.5
        while not stop.is_set():
            try:
                self.run_once()
                self.maybe_push()
                backoff = 0.5
            except redis.RedisError:
                log.warning("event stream unavailable; retrying in %.1fs", backoff)
                stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)
