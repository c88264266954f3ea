"""WebSocket consumers. Messages are hints with a sequence number and a snapshot; the
JSON views stay the source of truth (a client that sees a gap re-reads them). All sockets
need a logged-in session: an anonymous visitor is closed with 4401 before the handshake
completes.

- ``/ws/overview/``: ``{"type": "overview", "seq", "data": <GET /api/v1/overview>}``.
- ``/ws/queues/<topic>/<queue>/``: ``{"type": "queue", "seq", "data": <queue_state>,
  "events": [...]}``; unknown topic or queue: closed with 4404. On connect (seq 0) the
  events are the queue's latest stored ones, as in its JSON view; in updates, those
  stored since the previous update (see ``dashboard.monitor.live``); newest first either
  way. Dedupe events by ``id``.
- ``/ws/events/``: ``{"type": "events", "last_id"}``: events up to ``last_id`` are stored
  (sent on connect, then at most every push interval while events arrive).

Seq 0 is a fresh snapshot taken on connect; the ingester's next push sets the baseline;
after that, any seq other than previous + 1 means "re-read the JSON view".
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

from lockstep.dashboard.monitor.ingest import CURSOR
from lockstep.dashboard.monitor.live import (
    EVENTS_GROUP,
    OVERVIEW_GROUP,
    RECENT_EVENTS,
    compact_details,
    queue_group,
)
from lockstep.dashboard.monitor.models import IngestCursor
from lockstep.dashboard.monitor.push_socket import PushOnlyConsumer
from lockstep.dashboard.monitor.queries import recent_events
from lockstep.dashboard.monitor.redis_conn import get_redis
from lockstep.workers.errors import UnknownTopicError
from lockstep.workers.inspect import get_topic, overview, queue_state
from lockstep.workers.refs import QueueRef

UNAUTHENTICATED = 4401
NOT_FOUND = 4404


class _HintConsumer(PushOnlyConsumer):
    """Login check, one channel group, a snapshot on connect; what the client sends is
    dropped (``PushOnlyConsumer``)."""

    group = ""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHENTICATED)
            return
        if not await self.resolve():
            await self.close(code=NOT_FOUND)
            return
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_json(await database_sync_to_async(self.snapshot)())

    async def disconnect(self, code: int) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def resolve(self) -> bool:
        """Check the URL's arguments; set ``self.group``. False: no such thing (4404)."""
        raise NotImplementedError

    def snapshot(self) -> dict[str, Any]:
        raise NotImplementedError


class OverviewConsumer(_HintConsumer):
    """``/ws/overview/``: the overview on connect (seq 0) and on every ingester push."""

    async def resolve(self) -> bool:
        self.group = OVERVIEW_GROUP
        return True

    def snapshot(self) -> dict[str, Any]:
        return {"type": "overview", "seq": 0, "data": overview(get_redis())}

    async def overview_update(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "overview", "seq": message["seq"], "data": message["data"]})


class QueueConsumer(_HintConsumer):
    """``/ws/queues/<topic>/<queue>/``: one queue's state (every group) and its events."""

    topic = ""
    queue = -1

    async def resolve(self) -> bool:
        kwargs = self.scope["url_route"]["kwargs"]
        self.topic, self.queue = str(kwargs["topic"]), int(kwargs["queue"])
        if not await database_sync_to_async(_queue_exists)(self.topic, self.queue):
            return False
        self.group = queue_group(self.topic, self.queue)
        return True

    def snapshot(self) -> dict[str, Any]:
        data = queue_state(get_redis(), QueueRef(self.topic, self.queue))
        events = [
            {**e, "details": compact_details(e["details"])}
            for e in recent_events(self.topic, self.queue, RECENT_EVENTS)
        ]
        return {"type": "queue", "seq": 0, "data": data, "events": events}

    async def queue_update(self, message: dict[str, Any]) -> None:
        await self.send_json(
            {
                "type": "queue",
                "seq": message["seq"],
                "data": message["data"],
                "events": message["events"],
            }
        )


class EventsConsumer(_HintConsumer):
    """``/ws/events/``: "events up to ``last_id`` are stored" hints for the live feed."""

    async def resolve(self) -> bool:
        self.group = EVENTS_GROUP
        return True

    def snapshot(self) -> dict[str, Any]:
        cursor = IngestCursor.objects.filter(name=CURSOR).first()
        return {"type": "events", "last_id": cursor.last_id if cursor else "0-0"}

    async def events_hint(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "events", "last_id": message["last_id"]})


def _queue_exists(topic: str, queue: int) -> bool:
    try:
        return 0 <= queue < get_topic(get_redis(), topic).queues
    except UnknownTopicError:
        return False
