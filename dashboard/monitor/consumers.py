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
- ``/ws/events/``: ``{"type": "events", "seq", "last_id"}``: events up to ``last_id`` are
  stored (sent on connect, then at most every push interval while events arrive).

Seq 0 is a fresh snapshot taken on connect; the ingester's next push sets the baseline;
after that, any seq other than previous + 1 means "re-read the JSON view" (one scheme
for every socket: ``web.publish``).
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
from lockstep.dashboard.monitor.queries import recent_events
from lockstep.dashboard.web.push_socket import LiveConsumer
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.store.models import IngestCursor
from lockstep.workers.errors import UnknownTopicError
from lockstep.workers.inspect import get_topic, overview, queue_state
from lockstep.workers.refs import QueueRef


class OverviewConsumer(LiveConsumer):
    """``/ws/overview/``: the overview on connect (seq 0) and on every ingester push."""

    async def resolve(self, kwargs: dict[str, Any]) -> str | None:
        return OVERVIEW_GROUP

    def snapshot(self) -> dict[str, Any]:
        return {"type": "overview", "seq": 0, "data": overview(get_redis())}

    async def overview_update(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "overview", "seq": message["seq"], "data": message["data"]})


class QueueConsumer(LiveConsumer):
    """``/ws/queues/<topic>/<queue>/``: one queue's state (every group) and its events."""

    topic = ""
    queue = -1

    async def resolve(self, kwargs: dict[str, Any]) -> str | None:
        self.topic, self.queue = str(kwargs["topic"]), int(kwargs["queue"])
        if not await database_sync_to_async(_queue_exists)(self.topic, self.queue):
            return None
        return queue_group(self.topic, self.queue)

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


class EventsConsumer(LiveConsumer):
    """``/ws/events/``: "events up to ``last_id`` are stored" hints for the live feed."""

    async def resolve(self, kwargs: dict[str, Any]) -> str | None:
        return EVENTS_GROUP

    def snapshot(self) -> dict[str, Any]:
        cursor = IngestCursor.objects.filter(name=CURSOR).first()
        return {"type": "events", "seq": 0, "last_id": cursor.last_id if cursor else "0-0"}

    async def events_hint(self, message: dict[str, Any]) -> None:
        await self.send_json(
            {"type": "events", "seq": message["seq"], "last_id": message["last_id"]}
        )


def _queue_exists(topic: str, queue: int) -> bool:
    try:
        return 0 <= queue < get_topic(get_redis(), topic).queues
    except UnknownTopicError:
        return False
