"""A local HTTP receiver for the delivery tests: records every request and answers with
scripted statuses (then 200)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from django.utils import timezone

from lockstep.dashboard.alerts.models import Alert
from tests.support import free_port


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    url: str
    statuses: list[int] = field(default_factory=list)
    requests: list[Received] = field(default_factory=list)


@contextmanager
def receiver(statuses: list[int] | None = None) -> Iterator[Receiver]:
    """A receiver on a free port; ``statuses`` are answered in order, then 200."""
    port = free_port()
    state = Receiver(url=f"http://127.0.0.1:{port}/hook", statuses=list(statuses or []))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state.requests.append(Received(self.path, dict(self.headers.items()), body))
            status = state.statuses.pop(0) if state.statuses else 200
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok" if status < 300 else b"no")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def make_alert(**fields: Any) -> Alert:
    """An open alert as the evaluator would have opened it."""
    values: dict[str, Any] = {
        "rule": "queue_stuck",
        "fingerprint": "queue_stuck|orders|billing|3|||",
        "severity": "critical",
        "summary": "orders / billing / queue 3 has not moved for 90 s",
        "topic": "orders",
        "group": "billing",
        "queue": 3,
        "details": {"stuck_s": 90},
        "since": timezone.now(),
    }
    values.update(fields)
    return Alert.objects.create(**values)
