"""WebSocket consumers. Messages are hints with a sequence number and a snapshot; the
JSON view stays the source of truth (a client that sees a gap re-reads it)."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from dashboard.monitor.ingest import OVERVIEW_GROUP
from dashboard.monitor.redis_conn import get_redis
from workers.inspect import overview


class OverviewConsumer(AsyncJsonWebsocketConsumer):
    """``/ws/overview/``: sends ``{"type": "overview", "seq", "data"}`` on connect (seq 0:
    a fresh snapshot) and on every update the ingester pushes."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        await self.channel_layer.group_add(OVERVIEW_GROUP, self.channel_name)
        await self.accept()
        data = await database_sync_to_async(_snapshot)()
        await self.send_json({"type": "overview", "seq": 0, "data": data})

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(OVERVIEW_GROUP, self.channel_name)

    async def overview_update(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "overview", "seq": message["seq"], "data": message["data"]})


def _snapshot() -> dict[str, Any]:
    return overview(get_redis())
