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

When the channel layer's Redis stops answering (gone, or stalled beyond its read timeout:
``CHANNEL_LAYER_READ_TIMEOUT_S`` in settings), the socket is closed with 4503 (as 503) and
one warning line is logged, no traceback: the pages reconnect by themselves with backoff
and re-read their JSON view.
"""

from __future__ import annotations

import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

# The pages send nothing; 64 KiB leaves room for a future small command and stops a client
# from making the server decode megabytes for nothing.
MAX_CLIENT_MESSAGE_BYTES = 64 * 1024
MESSAGE_TOO_BIG = 4009
# The channel layer's Redis did not answer: "try again later", as 503.
REDIS_UNAVAILABLE = 4503
# Close codes of every socket's handshake, as HTTP's 401 and 404: no session, or the
# URL names nothing the user may watch.
UNAUTHENTICATED = 4401
NOT_FOUND = 4404
# The URL's query asks for something that cannot be shown (a bad sort or filter), as 400.
BAD_REQUEST = 4400


class PushOnlyConsumer(AsyncJsonWebsocketConsumer):
    """A JSON socket that only sends: what it receives is dropped, or closes it with 4009
    when too big; closed with 4503 when the channel layer's Redis fails."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            # An expected outage, not a bug: one line, and the page reconnects.
            logger.warning(
                "socket %s closed with %d: the channel layer's Redis did not answer (%s)",
                scope.get("path", "?"),
                REDIS_UNAVAILABLE,
                exc,
            )
            # Daphne drops a close for a client that has gone already.
            await send({"type": "websocket.close", "code": REDIS_UNAVAILABLE})

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        if text_data is not None:
            size = len(text_data.encode("utf-8", "surrogatepass"))
        else:
            size = len(bytes_data or b"")
        if size > MAX_CLIENT_MESSAGE_BYTES:
            await self.close(code=MESSAGE_TOO_BIG)


class LiveConsumer(PushOnlyConsumer):
    """The live sockets' contract: a signed-in user (4401 otherwise) watches one channel
    group, named by ``resolve`` from the URL (``None``: nothing there, 4404), and gets
    ``snapshot`` first (``None``: it went away, 4404), then every push to that group.

    The socket joins the group before reading the snapshot, so a push made in between is
    not lost (it may repeat what the snapshot holds: pushes carry state, not deltas).
    Subclasses name a handler per pushed message type (``overview.update`` →
    ``overview_update``)."""

    group = ""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHENTICATED)
            return
        try:
            group = await self.resolve(self.scope["url_route"]["kwargs"])
        except ValueError:  # the views' BadParameter: a bad query
            await self.close(code=BAD_REQUEST)
            return
        if group is None:
            await self.close(code=NOT_FOUND)
            return
        self.group = group
        await self.channel_layer.group_add(group, self.channel_name)
        snapshot = await database_sync_to_async(self.snapshot)()
        if snapshot is None:
            await self.close(code=NOT_FOUND)
            return
        await self.accept()
        await self.send_json(snapshot)
        await self.after_snapshot()

    async def after_snapshot(self) -> None:
        """What to send right after the snapshot (a snapshot split over several
        messages); nothing by default."""

    async def disconnect(self, code: int) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def resolve(self, kwargs: dict[str, Any]) -> str | None:
        """The channel group the URL's ``kwargs`` name, or ``None`` when they name
        nothing this user may watch; a ``ValueError`` for a query that cannot be served
        closes the socket with 4400."""
        raise NotImplementedError

    def snapshot(self) -> dict[str, Any] | None:
        """The first message (read in a worker thread), or ``None`` when what the URL
        named is gone."""
        raise NotImplementedError


class NotFoundConsumer(PushOnlyConsumer):
    """A socket path no route names: closed with 4404 (4401 when anonymous)."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        anonymous = user is None or not user.is_authenticated
        await self.close(code=UNAUTHENTICATED if anonymous else NOT_FOUND)
