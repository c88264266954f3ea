"""The web side's storage for the storage and soak benchmarks: a migrated SQLite database
in a temporary directory and ``manage.py ingest_events`` writing into it, read back with
``sqlite3`` (Django is imported only inside the subprocesses)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from bench.common import ROOT, terminate

EVENT_TABLE = "monitor_event"
CURSOR_TABLE = "monitor_ingestcursor"


def django_env(redis_url: str, db_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "lockstep.dashboard.settings",
        "REDIS_URL": redis_url,
        "CHANNELS_REDIS_URL": redis_url,
        "CELERY_BROKER_URL": redis_url,
        "DATABASE_URL": f"sqlite:///{db_path}",
        "LOG_LEVEL": "WARNING",
    }


@contextmanager
def migrated_template(redis_url: str) -> Iterator[Path]:
    """A migrated empty database (copied for each run: one migration for all of them)."""
    workdir = Path(tempfile.mkdtemp(prefix="lockstep-bench-db-"))
    path = workdir / "template.sqlite3"
    try:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"],
            cwd=ROOT,
            env=django_env(redis_url, path),
            check=True,
            capture_output=True,
            timeout=180,
        )
        checkpoint(path)
        yield path
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def copy_database(template: Path, name: str) -> Path:
    path = template.with_name(f"{name}.sqlite3")
    shutil.copyfile(template, path)
    return path


def checkpoint(path: Path) -> None:
    """Move the write-ahead log into the database file, so its size is the data's."""
    with closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def size_bytes(path: Path) -> int:
    """The database file plus its write-ahead log (the settings turn WAL on)."""
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def logical_bytes(path: Path) -> int:
    """The database's size as readers see it (pages in use, WAL frames included): what the
    file holds after a checkpoint. The WAL file itself grows with every transaction, even
    one that only moves the ingest cursor, until SQLite checkpoints and reuses it."""
    (pages,) = _query(path, "PRAGMA page_count")[0]
    (page_size,) = _query(path, "PRAGMA page_size")[0]
    return int(str(pages)) * int(str(page_size))


def _query(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as db:
        return list(db.execute(sql, params))


def event_count(path: Path) -> int:
    return int(str(_query(path, f"SELECT COUNT(*) FROM {EVENT_TABLE}")[0][0]))


def events_by_type(path: Path) -> dict[str, tuple[int, int]]:
    """Per event type: (rows, bytes of their column values) — the payload the rows carry,
    before SQLite's page and index overhead."""
    rows = _query(
        path,
        f"SELECT type, COUNT(*), SUM(LENGTH(stream_id) + LENGTH(type) + LENGTH(topic) "
        f'+ LENGTH("group") + LENGTH(key) + LENGTH(consumer) + LENGTH(details) + 8 * 4) '
        f"FROM {EVENT_TABLE} GROUP BY type ORDER BY type",
    )
    return {str(t): (int(str(n)), int(str(b or 0))) for t, n, b in rows}


def ingested_up_to(path: Path, cursor: str = "events") -> str:
    """The last entry ID the ingester stored of one event stream: ``events`` is the cursor
    of ``ls:events``, a shard's cursor is named by its key."""
    rows = _query(path, f"SELECT last_id FROM {CURSOR_TABLE} WHERE name = ?", (cursor,))
    return str(rows[0][0]) if rows else "0-0"


class IngesterProcess:
    """``manage.py ingest_events`` into ``db_path``; output kept in a file next to it."""

    def __init__(self, redis_url: str, db_path: Path) -> None:
        self._log = open(db_path.with_suffix(".ingest.log"), "wb")  # noqa: SIM115 (closed by stop)
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "ingest_events"],
            cwd=ROOT,
            env=django_env(redis_url, db_path),
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def check(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"the ingester exited ({self.proc.returncode})")

    def stop(self) -> None:
        terminate(self.proc)
        self._log.close()
