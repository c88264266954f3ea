"""The progress socket of an action request: ``/ws/dead-letters/requests/<request_id>/``.

On connect: ``{"type": "progress", "seq": 0, ...request_shape...}`` read from the
database; then one message per progress push of the request (``progress.publish``),
``{"type": "progress", "seq": n, ...}``. Seq 0 is the snapshot; the first push after it
sets the baseline; after that a seq other than previous + 1 means "re-read the status
URL". The socket needs a logged-in session (closed with 4401 before the handshake
otherwise); an unknown request, or any other path under ``/ws/dead-letters/``
(``web.push_socket.NotFoundConsumer``), is closed with 4404.
"""

from __future__ import annotations

from typing import Any

from lockstep.dashboard.deadletters.actions import REQUEST_ID
from lockstep.dashboard.deadletters.models import ActionRequest
from lockstep.dashboard.deadletters.progress import progress_group, request_shape
from lockstep.dashboard.web.push_socket import LiveConsumer


class RequestProgressConsumer(LiveConsumer):
    request_id = ""

    async def resolve(self, kwargs: dict[str, Any]) -> str | None:
        self.request_id = str(kwargs.get("request_id", ""))
        return progress_group(self.request_id) if REQUEST_ID.match(self.request_id) else None

    def snapshot(self) -> dict[str, Any] | None:
        return _snapshot(self.request_id)

    async def progress_update(self, message: dict[str, Any]) -> None:
        await self.send_json({**message["data"], "type": "progress", "seq": message["seq"]})


def _snapshot(request_id: str) -> dict[str, Any] | None:
    request = ActionRequest.objects.filter(request_id=request_id).first()
    if request is None:
        return None
    return {**request_shape(request), "type": "progress", "seq": 0}
