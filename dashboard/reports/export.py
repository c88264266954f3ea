"""Export ``Event`` rows to the JSON-lines file the Spark job reads.

The format is ``analytics.schema``'s contract: one object per event with the fields of
``EXPORT_FIELDS``, ``ts_ms`` as epoch milliseconds and ``details`` as a JSON string.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from analytics.schema import EXPORT_FIELDS
from dashboard.monitor.models import Event

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Rows fetched per database round trip; keeps memory flat on a large window.
CHUNK_ROWS = 5000
# Exports kept on disk, newest first: enough to re-run a week of nights by hand.
KEEP_EXPORTS = 7
EXPORT_GLOB = "events-run*.jsonl"

_COLUMNS = (
    "stream_id",
    "type",
    "ts",
    "topic",
    "group",
    "queue",
    "key",
    "token",
    "consumer",
    "details",
)


def export_path(directory: Path, run_id: int, until: datetime) -> Path:
    return directory / f"events-run{run_id}-{until.astimezone(UTC):%Y%m%dT%H%M%SZ}.jsonl"


def export_events(path: Path, since: datetime, until: datetime) -> int:
    """Write the events with ``since <= ts < until`` to ``path``, oldest first; return how
    many. The file appears complete or not at all (written aside, then renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    rows = (
        Event.objects.filter(ts__gte=since, ts__lt=until)
        .order_by("ts", "id")
        .values_list(*_COLUMNS)
        .iterator(chunk_size=CHUNK_ROWS)
    )
    count = 0
    with partial.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(_line(row))
            count += 1
    partial.replace(path)
    return count


def _line(row: tuple[Any, ...]) -> str:
    stream_id, type_, ts, topic, group, queue, key, token, consumer, details = row
    ts_ms = (ts - EPOCH) // timedelta(milliseconds=1)
    details_json = json.dumps(details, separators=(",", ":"), default=str)
    values = (stream_id, type_, ts_ms, topic, group, queue, key, token, consumer, details_json)
    return json.dumps(dict(zip(EXPORT_FIELDS, values, strict=True)), separators=(",", ":")) + "\n"


def prune_exports(directory: Path, keep: int = KEEP_EXPORTS) -> list[Path]:
    """Delete all but the ``keep`` newest export files; return the deleted paths."""
    exports = sorted(directory.glob(EXPORT_GLOB), key=lambda p: p.stat().st_mtime, reverse=True)
    doomed = exports[keep:]
    for path in doomed:
        path.unlink(missing_ok=True)
    return doomed
