"""The progress socket of an action request: ``/ws/dead-letters/requests/<request_id>/``.

On connect: ``{"type": "progress", "seq": 0, ...request_shape...}`` read from the
database; then one message per progress push of the request (``progress.publish``),
``{"type": "progress", "seq": n, ...}``. Seq 0 is the snapshot; the first push after it
sets the baseline; after that a seq other than previous + 1 means "re-read the status
URL". The socket needs a logged-in session (closed with 4401 before the handshake
otherwise); an unknown request, or any other path under ``/ws/dead-letters/``, is closed
with 4404.
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

from lockstep.dashboard.deadletters.actions import REQUEST_ID
from lockstep.dashboard.deadletters.models import ActionRequest
from lockstep.dashboard.deadletters.progress import progress_group, request_shape
from lockstep.dashboard.monitor.push_socket import PushOnlyConsumer

UNAUTHENTICATED = 4401
NOT_FOUND = 4404


class RequestProgressConsumer(PushOnlyConsumer):
    group = ""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHENTICATED)
            return
        request_id = str(self.scope["url_route"]["kwargs"].get("request_id", ""))
        if not REQUEST_ID.match(request_id):
            await self.close(code=NOT_FOUND)
            return
        # Join before reading the snapshot: a push made in between is not lost.
        self.group = progress_group(request_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        snapshot = await database_sync_to_async(_snapshot)(request_id)
        if snapshot is None:
            await self.close(code=NOT_FOUND)
            return
        await self.accept()
        await self.send_json(snapshot)

    async def disconnect(self, code: int) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def progress_update(self, message: dict[str, Any]) -> None:
        await self.send_json({**message["data"], "type": "progress", "seq": message["seq"]})


class NotFoundConsumer(PushOnlyConsumer):
    """Any other socket path (under ``/ws/dead-letters/``, and the catch-all route of
    ``dashboard.asgi``): closed with 4404 (4401 when anonymous)."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        anonymous = user is None or not user.is_authenticated
        await self.close(code=UNAUTHENTICATED if anonymous else NOT_FOUND)


def _snapshot(request_id: str) -> dict[str, Any] | None:
    request = ActionRequest.objects.filter(request_id=request_id).first()
    if request is None:
        return None
    return {**request_shape(request), "type": "progress", "seq": 0}
