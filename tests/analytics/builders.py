"""Hand-built rows of the three data sets (``analytics.layout``), as frames for the
transforms or written to a data location for the whole job."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, date, datetime
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from lockstep.analytics.extract import DayData
from lockstep.analytics.layout import (
    COLUMNS,
    DATE_COLUMN,
    EVENTS,
    HOUR_COLUMN,
    MESSAGES,
    SAMPLES,
    TIME_COLUMN,
    Partition,
    arrow_schema,
)
from lockstep.analytics.spark_layout import spark_schema
from lockstep.analytics.storage import write_batch

DAY = date(2026, 11, 23)
T0 = int(datetime(2026, 11, 23, tzinfo=UTC).timestamp() * 1000)  # the day's midnight, ms
SECOND = 1000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

_ids = itertools.count(1)


def at(hours: float = 0, minutes: float = 0, seconds: float = 0) -> int:
    """Epoch ms of a time on ``DAY``."""
    return T0 + round(hours * HOUR + minutes * MINUTE + seconds * SECOND)


def message(
    ts_ms: int, key: str, *, queue: int = 0, offset: int = 0, topic: str = "orders"
) -> dict[str, Any]:
    return {
        "topic": topic,
        "queue": queue,
        "offset": offset,
        "key": key,
        "produced_ms": ts_ms,
        "size": 16,
    }


def event(
    type_: str,
    ts_ms: int,
    *,
    queue: int | None = 0,
    key: str = "",
    offset: int | None = None,
    n: int | None = None,
    error: str | None = None,
    topic: str = "orders",
    group: str = "mailer",
    **details: Any,
) -> dict[str, Any]:
    if error is not None:
        details["error"] = error
    return {
        "id": f"{ts_ms}-{next(_ids)}",
        "type": type_,
        "ts_ms": ts_ms,
        "topic": topic,
        "group": group,
        "queue": queue,
        "key": key,
        "token": 1,
        "consumer": "c1",
        "offset": offset,
        "offset_to": None,
        "n": n,
        "reconsume_times": None,
        "error_type": error.split(":")[0] if error else None,
        "dlq_id": None,
        "details": json.dumps(details),
    }


def sample(
    ts_ms: int,
    *,
    lag: int = 0,
    committed: int = 0,
    time_lag_s: float = 0.0,
    queue: int = 0,
    topic: str = "orders",
    group: str = "mailer",
    head_key: str = "",
    retries: int = 0,
    blocked: list[dict[str, Any]] | None = None,
    key_ordering: bool = False,
) -> dict[str, Any]:
    return {
        "ts_ms": ts_ms,
        "topic": topic,
        "group": group,
        "queue": queue,
        "max_offset": committed + lag,
        "committed_offset": committed,
        "lag": lag,
        "time_lag_s": time_lag_s,
        "owner": "c1",
        "state": "consuming",
        "head_offset": committed,
        "head_key": head_key,
        "retries": retries,
        "blocked_count": len(blocked or []) if key_ordering or blocked else None,
        "held_keys": 0,
        "parked": 0,
        "blocked_keys": blocked or [],
    }


def blocked_key(
    key: str,
    offset: int,
    since_ms: int,
    *,
    retries: int = 1,
    waiting: int = 0,
    error: str = "ValueError: boom",
    held: bool = False,
) -> dict[str, Any]:
    return {
        "key": key,
        "offset": offset,
        "retries": retries,
        "waiting": waiting,
        "since_ms": since_ms,
        "error": error,
        "held": held,
    }


def frame(spark: SparkSession, data_set: str, rows: list[dict[str, Any]]) -> DataFrame:
    """Rows as the extract step would give them, with ``date`` and ``hour``."""
    names = [name for name, _ in COLUMNS[data_set]]
    tuples = []
    for row in rows:
        place = Partition.of_ms(row[TIME_COLUMN[data_set]])
        tuples.append((*(row.get(n) for n in names), place.day.isoformat(), place.hour))
    assert spark_schema(data_set).fieldNames()[-2:] == [DATE_COLUMN, HOUR_COLUMN]
    return spark.createDataFrame(tuples, spark_schema(data_set))


def day_data(
    spark: SparkSession,
    *,
    messages: list[dict[str, Any]] | None = None,
    events: list[dict[str, Any]] | None = None,
    samples: list[dict[str, Any]] | None = None,
) -> DayData:
    return DayData(
        messages=frame(spark, MESSAGES, messages or []),
        events=frame(spark, EVENTS, events or []),
        samples=frame(spark, SAMPLES, samples or []),
    )


def write(uri: str, data_set: str, rows: list[dict[str, Any]], batch: str = "t1") -> None:
    """Write rows into the real layout under ``uri``."""
    write_batch(uri, data_set, pa.Table.from_pylist(rows, schema=arrow_schema(data_set)), batch)
