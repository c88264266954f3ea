"""``/ws/alerts/``: the nav badge's and the toasts' socket on every page.

A signed-in user gets ``push.message()`` (the counts, nothing opened) as seq 0 on
connect, then every ``alerts.update`` the channel layer carries (``dashboard.alerts.push``),
numbered as every push is (``web.publish``). Pushes are hints: the counts in each one are
read from the database when it is sent, so a lost one is corrected by the next. Anonymous
visitors are closed with 4401 before the handshake completes, as on the monitor's sockets.
"""

from __future__ import annotations

from typing import Any

from lockstep.dashboard.alerts import push
from lockstep.dashboard.web.push_socket import LiveConsumer


class AlertsConsumer(LiveConsumer):
    async def resolve(self, kwargs: dict[str, Any]) -> str | None:
        return push.ALERTS_GROUP

    def snapshot(self) -> dict[str, Any] | None:
        return {**push.message(), "seq": 0}

    async def alerts_update(self, event: dict[str, Any]) -> None:
        await self.send_json(event)
