"""WebSocket consumers. Messages are hints with a sequence number and a snapshot; the
JSON views stay the source of truth (a client that sees a gap re-reads them). All sockets
need a logged-in session: an anonymous visitor is closed with 4401 before the handshake
completes.

- ``/ws/overview/?<query>``: the overview page's own view (``OverviewConsumer``,
  ``overview_socket``): ``{"type": "overview", "seq", "generated_at_ms", <parts>}``.
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

import json
from typing import Any

from channels.db import database_sync_to_async
from django.http import QueryDict

from lockstep.dashboard.monitor import overview_socket
from lockstep.dashboard.monitor.ingest import CURSOR
from lockstep.dashboard.monitor.live import (
    EVENTS_GROUP,
    OVERVIEW_GROUP,
    RECENT_EVENTS,
    compact_details,
    queue_group,
    unwatch,
    watch,
)
from lockstep.dashboard.monitor.queries import recent_events
from lockstep.dashboard.web.push_socket import LiveConsumer
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.store import fleet_read
from lockstep.dashboard.web.store.models import IngestCursor
from lockstep.workers.errors import UnknownTopicError
from lockstep.workers.inspect import get_topic, queue_state
from lockstep.workers.refs import QueueRef


class OverviewConsumer(LiveConsumer):
    """``/ws/overview/?<the page's query>``: the page's view of the fleet state (summary,
    worst queues, its table page) whole on connect, then its changes after each ingester
    push (``overview_socket``: parts, at most 64 KiB a message). The socket numbers its
    own messages: seq 0, then 1, 2, … A query the page could not show closes it with
    4400."""

    view = fleet_read.TableView()

    async def resolve(self, kwargs: dict[str, Any]) -> str | None:
        query = QueryDict(self.scope.get("query_string", b"").decode("latin-1"))
        self.view = fleet_read.table_view(query)
        self.sent: overview_socket.View | None = None
        self.seq = 0
        self.reading = False
        self.again = False
        self.backlog: list[dict[str, Any]] = []
        return OVERVIEW_GROUP

    def snapshot(self) -> dict[str, Any]:
        fleet_read.ensure_fresh(get_redis())
        view = overview_socket.socket_view(overview_socket.overview_data(self.view))
        bodies = overview_socket.messages(overview_socket.changes(None, view))
        self.sent = view
        first, *self.backlog = bodies
        return self._message(first, view, seq=0)

    async def after_snapshot(self) -> None:
        rest, self.backlog = self.backlog, []
        for body in rest:
            await self._send(body, self.sent)

    async def overview_update(self, message: dict[str, Any]) -> None:
        """The ingester wrote the fleet state: read this page's view again and send what
        changed. Hints that arrive during a read are folded into one more read."""
        if self.reading:
            self.again = True
            return
        self.reading = True
        try:
            while True:
                self.again = False
                view = await database_sync_to_async(self._read)()
                change = overview_socket.changes(self.sent, view)
                # Nothing changed: an empty message still tells the page it is live.
                for body in overview_socket.messages(change) if change else [{}]:
                    await self._send(body, view)
                self.sent = view
                if not self.again:
                    break
        finally:
            self.reading = False

    def _read(self) -> overview_socket.View:
        return overview_socket.socket_view(overview_socket.overview_data(self.view))

    async def _send(self, body: dict[str, Any], view: overview_socket.View | None) -> None:
        self.seq += 1
        await self.send_json(self._message(body, view, seq=self.seq))

    @staticmethod
    def _message(
        body: dict[str, Any], view: overview_socket.View | None, seq: int
    ) -> dict[str, Any]:
        at = view["generated_at_ms"] if view else 0
        return {"type": "overview", "seq": seq, "generated_at_ms": at, **body}

    @classmethod
    async def encode_json(cls, content: Any) -> str:
        return json.dumps(content, separators=(",", ":"))


class QueueConsumer(LiveConsumer):
    """``/ws/queues/<topic>/<queue>/``: one queue's state (every group) and its events."""

    topic = ""
    queue = -1

    async def resolve(self, kwargs: dict[str, Any]) -> str | None:
        self.topic, self.queue = str(kwargs["topic"]), int(kwargs["queue"])
        if not await database_sync_to_async(_queue_exists)(self.topic, self.queue):
            return None
        ref = QueueRef(self.topic, self.queue)
        await database_sync_to_async(watch)(get_redis(), ref, self.channel_name)
        return queue_group(self.topic, self.queue)

    async def disconnect(self, code: int) -> None:
        if self.group:
            ref = QueueRef(self.topic, self.queue)
            await database_sync_to_async(unwatch)(get_redis(), ref, self.channel_name)
        await super().disconnect(code)

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
