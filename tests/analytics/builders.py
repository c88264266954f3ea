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
    retries: int | None = 1,
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
    schema = spark_schema(data_set)
    assert schema.fieldNames()[-2:] == [DATE_COLUMN, HOUR_COLUMN]
    columns = arrow_schema(data_set)
    columns = columns.append(pa.field(DATE_COLUMN, pa.string()))
    columns = columns.append(pa.field(HOUR_COLUMN, pa.int32()))
    table = pa.Table.from_arrays(
        [pa.array([row[i] for row in tuples], type=f.type) for i, f in enumerate(columns)],
        schema=columns,
    )
    return spark.createDataFrame(table, schema)


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


DECLINED = "RuntimeError: demo: card declined (order {})"


def held_key_day() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(samples, events) of the demo's held keys in group ``billing`` (hold after the
    dead letter, three retries allowed): ``order-200`` at offset 12 fails at 18:20:00,
    :02, :06, is dead-lettered at :14 and held, replayed at 18:23:20 and released at
    18:23:25; ``order-100`` at offset 7 fails from 18:21:00, is held, and is still held
    at the day's last sample (18:30:00) although its replay was asked for at 18:30:05.
    The sampler (every 10 s from 18:20:10) never saw ``order-200`` retrying, ``order-100``
    once (18:21:10, two retries): held sightings carry no retries and "held" as error."""
    events = []
    for key, offset, start in (("order-200", 12, at(18, 20)), ("order-100", 7, at(18, 21))):
        error = DECLINED.format(key.split("-")[1])
        for times, after in ((1, 0), (2, 2), (3, 6)):
            failed = event(
                "consume_failed", start + after * SECOND, group="billing", key=key,
                offset=offset, n=1, error=error,
            )  # fmt: skip
            events.append({**failed, "reconsume_times": times})
        dead_ms = start + 14 * SECOND
        dead = event("dead_lettered", dead_ms, group="billing", key=key, offset=offset, error=error)
        parked = event("key_parked", dead_ms, group="billing", key=key, offset=offset)
        events += [{**dead, "reconsume_times": 3}, parked]
    events += [
        event("dead_letter_replayed", at(18, 23, 20), group="billing", key="order-200", offset=12),
        event("key_released", at(18, 23, 25), group="billing", key="order-200"),
        event("dead_letter_replayed", at(18, 30, 5), group="billing", key="order-100", offset=7),
    ]
    held_200 = blocked_key(
        "order-200", 12, at(18, 20, 14), retries=None, waiting=2, error="held", held=True
    )
    held_100 = blocked_key(
        "order-100", 7, at(18, 21, 14), retries=None, waiting=1, error="held", held=True
    )
    retrying_100 = blocked_key("order-100", 7, at(18, 21), retries=2, error=DECLINED.format("100"))
    samples = []
    for i in range(60):  # 18:20:10 to 18:30:00
        ts = at(18, 20, 10 + 10 * i)
        blocked = [held_200] if ts < at(18, 23, 25) and ts > at(18, 20, 14) else []
        if ts == at(18, 21, 10):
            blocked.append(retrying_100)
        elif ts > at(18, 21, 14):
            blocked.append(held_100)
        samples.append(
            sample(ts, group="billing", lag=len(blocked), blocked=blocked, key_ordering=True)
        )
    return samples, events
