"""WebSocket test helpers: communicators through the real ASGI stack (origin check,
session auth, Redis channel layer), a reference client implementing the pages' resync
rule, and hand-written runtime events."""

from __future__ import annotations

import time
from typing import Any

import redis
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.asgi import application
from lockstep.workers import keys

ORIGIN = (b"origin", b"http://127.0.0.1")
# Fields that move with the clock alone; everything else must match exactly.
TIME_FIELDS = ("lock_expires_in_ms", "lock_age_ms", "time_lag_s")


def communicator(path: str, cookie: str = "") -> WebsocketCommunicator:
    headers = [ORIGIN]
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    return WebsocketCommunicator(application, path, headers=headers)


@sync_to_async
def session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


async def drain(socket: WebsocketCommunicator, quiet: float = 0.5) -> list[dict[str, Any]]:
    """Every message the socket has for us until it stays quiet for ``quiet`` seconds."""
    out = []
    # receive_nothing, not a receive timeout: a timed-out receive cancels the application.
    while not await socket.receive_nothing(timeout=quiet, interval=0.02):
        out.append(await socket.receive_json_from(timeout=5))
    return out


def stable(state: dict[str, Any]) -> dict[str, Any]:
    """A queue state without the fields that change with the clock alone."""
    return {
        **{k: v for k, v in state.items() if k != "generated_at_ms"},
        "groups": [{k: v for k, v in g.items() if k not in TIME_FIELDS} for g in state["groups"]],
    }


def write_events(
    client: redis.Redis,
    topic: str,
    queue: int,
    count: int,
    type_: str = "consume_failed",
    group: str = "mailer",
) -> list[str]:
    """Append ``count`` runtime-shaped events about one queue, stamped now (1 ms apart);
    returns their stream IDs."""
    now_ms = int(time.time() * 1000)
    pipe = client.pipeline(transaction=False)
    for i in range(count):
        pipe.xadd(
            keys.EVENTS,
            {
                "type": type_,
                "ts": now_ms + i,
                "topic": topic,
                "group": group,
                "queue": queue,
                "key": f"order-{i}",
                "details": f'{{"offsets": [{i}], "error": "boom {i}"}}',
            },
        )
    return [i.decode() for i in pipe.execute()]


class ReferencePage:
    """What a page's script does with a queue socket (docs/events.md §5, STYLE.md): seq 0 is a
    snapshot; the next update sets the baseline; after that any seq but last + 1 means a
    hint was lost (or the ingester restarted): re-read the JSON view."""

    def __init__(self, read_json_view: Any) -> None:
        self.read_json_view = read_json_view
        self.data: dict[str, Any] | None = None
        self.last_seq: int | None = None
        self.resyncs = 0

    def on_message(self, message: dict[str, Any]) -> None:
        seq = message["seq"]
        if seq == 0:
            self.data, self.last_seq = message["data"], None
            return
        gap = self.last_seq is not None and seq != self.last_seq + 1
        self.last_seq = seq
        if gap:
            self.resyncs += 1
            self.data = self.read_json_view()
        else:
            self.data = message["data"]
