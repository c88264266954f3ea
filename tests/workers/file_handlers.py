"""A handler that records to a file instead of Redis, for tests of Redis outages: a handler
that used Redis itself would fail during the outage for reasons of its own.

``record_to_file`` appends one JSON line per handled message to the file named by
``LOCKSTEP_TEST_RECORD_FILE`` (one ``write`` per batch on an ``O_APPEND`` descriptor, so
lines of several threads and processes never interleave): ``k`` key, ``o`` offset, ``q``
queue, ``s`` the body's "seq", ``c`` consumer id, ``g`` group. It sleeps
``LOCKSTEP_TEST_HANDLER_MS`` per message, so a test can catch consumers mid-stream.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lockstep.workers import ConsumeStatus
from lockstep.workers.message import ConsumeContext, Message

RECORD_FILE_ENV = "LOCKSTEP_TEST_RECORD_FILE"
HANDLER_MS_ENV = "LOCKSTEP_TEST_HANDLER_MS"


def record_to_file(messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
    time.sleep(float(os.environ.get(HANDLER_MS_ENV, "0") or 0) * len(messages) / 1000.0)
    lines = "".join(
        json.dumps(
            {
                "k": m.key,
                "o": m.offset,
                "q": m.queue,
                "s": json.loads(m.body).get("seq"),
                "c": ctx.consumer_id,
                "g": ctx.group,
            }
        )
        + "\n"
        for m in messages
    )
    fd = os.open(os.environ[RECORD_FILE_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, lines.encode())
    finally:
        os.close(fd)
    return ConsumeStatus.SUCCESS


def recorded(path: Path, group: str | None = None) -> list[dict[str, Any]]:
    """The records in the order they were written, of one group or all. A last line
    without its newline is a write still under way (a reader can see part of a
    concurrent ``write`` to a regular file): it is left for the next read."""
    if not path.exists():
        return []
    complete, _, _ = path.read_text().rpartition("\n")
    records = [json.loads(line) for line in complete.splitlines() if line]
    return [r for r in records if group is None or r["g"] == group]


FILE_HANDLER = "tests.workers.file_handlers.record_to_file"
