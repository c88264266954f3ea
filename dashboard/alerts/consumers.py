"""``/ws/alerts/``: the nav badge's and the toasts' socket on every page.

A signed-in user gets ``push.message()`` (the counts, nothing opened) on connect, then
every ``alerts.update`` the channel layer carries (``dashboard.alerts.push``). Pushes
are hints: the counts in each one are read from the database when it is sent, so a lost
one is corrected by the next. Anonymous visitors are closed with 4401 before the
handshake completes, as on the monitor's sockets.
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

from lockstep.dashboard.alerts import push
from lockstep.dashboard.monitor.consumers import UNAUTHENTICATED
from lockstep.dashboard.monitor.push_socket import PushOnlyConsumer


class AlertsConsumer(PushOnlyConsumer):
    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHENTICATED)
            return
        await self.channel_layer.group_add(push.ALERTS_GROUP, self.channel_name)
        await self.accept()
        await self.send_json(await database_sync_to_async(push.message)())

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(push.ALERTS_GROUP, self.channel_name)

    async def alerts_update(self, event: dict[str, Any]) -> None:
        await self.send_json(event)
