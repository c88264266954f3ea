"""Hand-built event rows for transform tests, in ``analytics.schema.EVENT_SCHEMA`` shape."""

from __future__ import annotations

import itertools
import json
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from analytics.schema import EVENT_SCHEMA

_ids = itertools.count(1)


def event(
    type_: str,
    ts_ms: int,
    details: dict[str, Any] | str | None = None,
    *,
    topic: str = "orders",
    group: str = "mailer",
    queue: int | None = 0,
) -> tuple[Any, ...]:
    """One row; ``details`` as a dict is serialised like the export does, a str is used
    as it is (to feed malformed JSON)."""
    raw = json.dumps(details) if isinstance(details, dict) else details
    return (f"{ts_ms}-{next(_ids)}", type_, ts_ms, topic, group, queue, "", None, "", raw)


def sample(
    ts_ms: int, lag: int, committed: int, time_lag_s: float = 0.0, **place: Any
) -> tuple[Any, ...]:
    return event(
        "lag_sampled",
        ts_ms,
        {
            "max_offset": committed + lag,
            "committed_offset": committed,
            "lag": lag,
            "time_lag_s": time_lag_s,
            "owner": "w1",
        },
        **place,
    )


def commit(
    ts_ms: int, from_offset: int, offset: int, commits: int, **place: Any
) -> tuple[Any, ...]:
    return event(
        "offset_committed",
        ts_ms,
        {"from_offset": from_offset, "offset": offset, "commits": commits},
        **place,
    )


def events_frame(spark: SparkSession, rows: list[tuple[Any, ...]]) -> DataFrame:
    return spark.createDataFrame(rows, schema=EVENT_SCHEMA)
