"""Extract: one UTC day of each data set (docs/analytics.md §1) → DataFrames.

Only the day's partitions are listed and read (the path names the day), with the
layout's explicit schema, so a file written with a column missing still reads (nulls)
and no schema inference scans the files. A day without a folder reads as an empty frame.
Rows that break the contract (no topic, no time) are dropped here, so the transforms can
rely on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lockstep.analytics.layout import EVENTS, MESSAGES, SAMPLES, TIME_COLUMN, join_uri
from lockstep.analytics.spark_layout import spark_schema
from lockstep.analytics.storage import day_uri

# What the transforms read of events and samples: only these are cached (an event's
# details text is most of its size and is read only for the few failures at a stuck offset).
EVENT_COLUMNS = ("type", "ts_ms", "topic", "group", "queue", "key", "offset", "n", "error_type")
SAMPLE_COLUMNS = (
    "ts_ms",
    "topic",
    "group",
    "queue",
    "hour",
    "lag",
    "time_lag_s",
    "committed_offset",
    "head_key",
    "retries",
    "blocked_count",
    "blocked_keys",
)


@dataclass(frozen=True)
class DayData:
    """The day's frames. ``events`` (``EVENT_COLUMNS``) and ``samples``
    (``SAMPLE_COLUMNS``) are cached: every transform reads them and they are a small part
    of a day. ``messages`` and ``event_details`` (every event column, for the failures'
    error texts) are read where needed, with only the columns each query asks for."""

    messages: DataFrame
    events: DataFrame
    samples: DataFrame
    event_details: DataFrame | None = None

    def unpersist(self) -> None:
        self.events.unpersist()
        self.samples.unpersist()


def _exists(spark: SparkSession, uri: str) -> bool:
    """Whether ``uri`` exists, asked of Hadoop's file system for its scheme (so it works
    for every URI Spark can read, and never turns one into a local path)."""
    jvm: Any = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return bool(fs.exists(path))


def read_data_set(spark: SparkSession, uri: str, data_set: str, day: date) -> DataFrame:
    """One day of one data set, with the partition columns ``date`` and ``hour``."""
    schema = spark_schema(data_set)
    where = day_uri(uri, data_set, day)
    if not _exists(spark, where):
        return spark.createDataFrame([], schema)
    frame = (
        spark.read.schema(schema)
        .option("basePath", join_uri(uri, data_set))
        .option("recursiveFileLookup", "false")
        .parquet(where)
    )
    valid = F.col(TIME_COLUMN[data_set]).isNotNull() & F.col("topic").isNotNull()
    if data_set != MESSAGES:
        valid = valid & (F.coalesce(F.col("group"), F.lit("")) != "")
    return frame.filter(valid)


def read_day(spark: SparkSession, uri: str, day: date) -> DayData:
    events = read_data_set(spark, uri, EVENTS, day)
    return DayData(
        messages=read_data_set(spark, uri, MESSAGES, day),
        events=events.select(*EVENT_COLUMNS).cache(),
        samples=read_data_set(spark, uri, SAMPLES, day).select(*SAMPLE_COLUMNS).cache(),
        event_details=events,
    )
