"""What every WebSocket of the dashboard shares: the server pushes, the page says nothing.

A frame a client sends anyway (text or binary, JSON or not, a "subscription" to anything)
is dropped without an answer: it cannot fail the consumer, so it cannot cost the socket
its connection or the server a traceback. One larger than ``MAX_CLIENT_MESSAGE_BYTES``
closes the socket with 4009: RFC 6455's "message too big" is 1009, but daphne (autobahn)
lets an application close only with 1000 or 3000-4999, so the application's code is 4009,
as 4401/4404 mirror 401/404. Daphne refuses far larger frames itself before they reach
the application (``--websocket-max-message-size`` and ``--websocket-max-frame-size``,
1 MiB each by default): it drops the connection without a close frame (autobahn fails
connections "by drop"; a browser reports 1006).
"""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer

# The pages send nothing; 64 KiB leaves room for a future small command and stops a client
# from making the server decode megabytes for nothing.
MAX_CLIENT_MESSAGE_BYTES = 64 * 1024
MESSAGE_TOO_BIG = 4009


class PushOnlyConsumer(AsyncJsonWebsocketConsumer):
    """A JSON socket that only sends: what it receives is dropped, or closes it with 4009
    when too big."""

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        if text_data is not None:
            size = len(text_data.encode("utf-8", "surrogatepass"))
        else:
            size = len(bytes_data or b"")
        if size > MAX_CLIENT_MESSAGE_BYTES:
            await self.close(code=MESSAGE_TOO_BIG)
