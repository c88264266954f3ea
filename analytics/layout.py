"""The analytics data set layout (docs/analytics.md §1): one definition of every column,
shared by the writer (pyarrow, on the Django side), the reader (Spark, through
``spark_layout``) and the benchmark's generator. It imports no Spark: the dashboard
writes the data set without the ``[analytics]`` extra.

Under the data location there are three data sets, each Hive-partitioned by the UTC date
and hour of its time column: ``<uri>/<data set>/date=YYYY-MM-DD/hour=HH/part-*.parquet``.
The partition columns are not stored in the files.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

import pyarrow as pa

MESSAGES = "messages"
EVENTS = "events"
SAMPLES = "samples"
DATA_SETS = (MESSAGES, EVENTS, SAMPLES)

DATE_COLUMN = "date"  # partition: YYYY-MM-DD (string)
HOUR_COLUMN = "hour"  # partition: 0..23 (int)

BLOCKED_KEY_FIELDS: tuple[tuple[str, str], ...] = (
    ("key", "string"),
    ("offset", "long"),
    ("retries", "int"),
    ("waiting", "int"),
    ("since_ms", "long"),
    ("error", "string"),
    ("held", "bool"),
)

COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    MESSAGES: (
        ("topic", "string"),
        ("queue", "int"),
        ("offset", "long"),
        ("key", "string"),
        ("produced_ms", "long"),
        ("size", "int"),
    ),
    EVENTS: (
        ("id", "string"),
        ("type", "string"),
        ("ts_ms", "long"),
        ("topic", "string"),
        ("group", "string"),
        ("queue", "int"),
        ("key", "string"),
        ("token", "long"),
        ("consumer", "string"),
        ("offset", "long"),
        ("offset_to", "long"),
        ("n", "int"),
        ("reconsume_times", "int"),
        ("error_type", "string"),
        ("dlq_id", "string"),
        ("details", "string"),
    ),
    SAMPLES: (
        ("ts_ms", "long"),
        ("topic", "string"),
        ("group", "string"),
        ("queue", "int"),
        ("max_offset", "long"),
        ("committed_offset", "long"),
        ("lag", "long"),
        ("time_lag_s", "double"),
        ("owner", "string"),
        ("state", "string"),
        ("head_offset", "long"),
        ("head_key", "string"),
        ("retries", "int"),
        ("blocked_count", "int"),
        ("held_keys", "int"),
        ("parked", "long"),
        ("blocked_keys", "blocked_keys"),
    ),
}

# The column whose UTC time (epoch ms) places a row in its date and hour partition.
TIME_COLUMN = {MESSAGES: "produced_ms", EVENTS: "ts_ms", SAMPLES: "ts_ms"}

_ARROW: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int": pa.int32(),
    "long": pa.int64(),
    "double": pa.float64(),
    "bool": pa.bool_(),
}


def _arrow_type(kind: str) -> pa.DataType:
    if kind == "blocked_keys":
        return pa.list_(pa.struct([pa.field(n, _ARROW[k]) for n, k in BLOCKED_KEY_FIELDS]))
    return _ARROW[kind]


def arrow_schema(data_set: str) -> pa.Schema:
    """The columns stored in a data set's files (no partition columns)."""
    return pa.schema([pa.field(n, _arrow_type(k)) for n, k in COLUMNS[data_set]])


@dataclass(frozen=True)
class Partition:
    day: date
    hour: int

    @classmethod
    def of_ms(cls, epoch_ms: int) -> Partition:
        moment = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
        return cls(moment.date(), moment.hour)

    def path(self, data_set: str) -> str:
        """Relative to the data location, with forward slashes (any file system)."""
        return f"{data_set}/{day_path(self.day)}/{HOUR_COLUMN}={self.hour:02d}"


def day_path(day: date) -> str:
    return f"{DATE_COLUMN}={day.isoformat()}"


def join_uri(base: str, *parts: str) -> str:
    """``base`` and ``parts`` joined by single slashes, the scheme left as it is."""
    return "/".join([base.rstrip("/"), *(p.strip("/") for p in parts)])
