"""Load: collect transform results into plain dicts, keyed like the Django models' fields
(times as aware UTC datetimes). The caller stores them; nothing here knows where.

Every frame collected here is bounded: rows per queue and hour, per queue, per group, the
top lists, or the stuck episodes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql import DataFrame

Row = dict[str, Any]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def from_ms(ms: int | None) -> datetime | None:
    """Epoch milliseconds → aware UTC datetime, exactly (no float rounding)."""
    return None if ms is None else EPOCH + timedelta(milliseconds=ms)


def rows(frame: DataFrame, order: tuple[str, ...] = ()) -> list[Row]:
    """The frame's rows as dicts, sorted by ``order`` (column names; a leading "-" sorts
    that column descending; nulls first)."""
    found = [row.asDict() for row in frame.collect()]
    for spec in reversed(order):  # stable sorts, last key first
        name = spec.lstrip("-")
        found.sort(key=lambda r: (r[name] is not None, r[name]), reverse=spec.startswith("-"))
    return found


def episode_rows(episodes: DataFrame, order: tuple[str, ...] = ()) -> list[Row]:
    """Stuck episodes (sorted by ``order`` over the transform's columns) with their times
    as datetimes (``started_at``, ``ended_at`` (None while open), ``last_seen_at``)."""
    out = []
    for row in rows(episodes, order):
        row["started_at"] = from_ms(row.pop("start_ms"))
        row["ended_at"] = from_ms(row.pop("end_ms"))
        row["last_seen_at"] = from_ms(row.pop("last_seen_ms"))
        out.append(row)
    return out
