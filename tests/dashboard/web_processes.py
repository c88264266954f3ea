"""The web side as real processes for the ingester tests (``Site`` of ``stack``), with the
stored events read back from its database (SQLite, or PostgreSQL on the PostgreSQL run)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

import psycopg
import redis

from lockstep.workers.events import read_all_events
from lockstep.workers.message import ConsumeContext, ConsumeStatus, Message
from tests.dashboard.stack import Site, site_env
from tests.support import free_port

# A trigger that refuses every new event row ("a disk failure"), in each store's dialect.
REFUSE_EVENT_ROWS = {
    "sqlite": [
        "CREATE TRIGGER refuse BEFORE INSERT ON monitor_event "
        "BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END"
    ],
    "postgresql": [
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'simulated disk failure'; END $$",
        "CREATE TRIGGER refuse BEFORE INSERT ON monitor_event "
        "FOR EACH ROW EXECUTE FUNCTION refuse()",
    ],
}
ACCEPT_EVENT_ROWS = {
    "sqlite": ["DROP TRIGGER refuse"],
    "postgresql": ["DROP TRIGGER refuse ON monitor_event", "DROP FUNCTION refuse()"],
}


class WebSide(Site):
    """The ingester and daphne on a database of their own, which tests read back with
    sqlite3 or psycopg (``query``)."""

    def __init__(self, redis_url: str, tmp: Path, **extra_env: str) -> None:
        super().__init__(site_env(redis_url, tmp, **extra_env), free_port(), tmp)
        url = self.env["DATABASE_URL"]
        self.vendor = "sqlite" if url.startswith("sqlite:") else "postgresql"
        self.db = url.removeprefix("sqlite://")

    def query(self, sql: str) -> list[tuple[object, ...]]:
        """The rows of ``sql`` (none for a statement), committed at once."""
        if self.vendor == "postgresql":
            with psycopg.connect(self.db, autocommit=True) as db:
                cursor = db.execute(sql)
                return list(cursor.fetchall()) if cursor.description else []
        with sqlite3.connect(self.db, timeout=30) as db:
            return list(db.execute(sql))

    def refuse_event_rows(self) -> None:
        """From now on, every insert into the events table fails, as on a failing disk."""
        for sql in REFUSE_EVENT_ROWS[self.vendor]:
            self.query(sql)

    def accept_event_rows(self) -> None:
        """Undo ``refuse_event_rows``."""
        for sql in ACCEPT_EVENT_ROWS[self.vendor]:
            self.query(sql)

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
