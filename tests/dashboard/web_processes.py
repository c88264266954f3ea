"""The web side as real processes for the ingester tests (``Site`` of ``stack``), with the
stored events read back from its SQLite database."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

import redis

from lockstep.workers.events import read_all_events
from lockstep.workers.message import ConsumeContext, ConsumeStatus, Message
from tests.dashboard.stack import Site, site_env
from tests.support import free_port


class WebSide(Site):
    """The ingester and daphne on a database of their own, which tests read back with
    sqlite3."""

    def __init__(self, redis_url: str, tmp: Path, **extra_env: str) -> None:
        super().__init__(site_env(redis_url, tmp, **extra_env), free_port(), tmp)
        self.db = tmp / "db.sqlite3"

    def query(self, sql: str) -> list[tuple[object, ...]]:
        with sqlite3.connect(self.db, timeout=30) as db:
            return list(db.execute(sql))

    def stored_count(self) -> int:
        ((count,),) = self.query("SELECT COUNT(*) FROM monitor_event")
        assert isinstance(count, int)
        return count

    def stored_ids(self) -> list[str]:
        return [str(r[0]) for r in self.query("SELECT stream_id FROM monitor_event")]


def stream_ids(client: redis.Redis) -> list[str]:
    """The ID (as the dashboard stores it) of every event in every event stream."""
    return [e["id"] for e in read_all_events(client)]


def sleep_5ms(messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
    """A handler with a steady I/O-bound pace (5 ms a message), for rate comparisons."""
    time.sleep(0.005 * len(messages))
    return ConsumeStatus.SUCCESS


SLEEP_5MS = "tests.dashboard.web_processes.sleep_5ms"
