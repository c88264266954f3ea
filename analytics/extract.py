"""Extract: an exported event file → a DataFrame with an explicit schema."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from analytics.schema import CORRUPT_COLUMN, EVENT_SCHEMA


def read_events(spark: SparkSession, path: str | Path) -> DataFrame:
    """Read a JSON-lines export (see :mod:`analytics.schema`).

    The result has the columns of ``EVENT_SCHEMA`` plus ``_corrupt_record``: the raw line
    when it is not valid JSON or a value has the wrong type (all other columns are then
    null), else null. The frame is cached: every transform reads it, and caching is also
    what makes ``_corrupt_record`` reliable, since Spark fills it only for the columns a
    query reads when it reads the file directly. Call ``unpersist()`` when done.

    With a non-local master, ``path`` must be readable by the executors (shared storage).
    """
    schema = T.StructType([*EVENT_SCHEMA.fields, T.StructField(CORRUPT_COLUMN, T.StringType())])
    return (
        spark.read.schema(schema)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_COLUMN)
        .json(str(path))
        .cache()
    )
