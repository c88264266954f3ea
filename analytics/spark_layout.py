"""The data sets' columns as Spark reads them (``layout`` is the one definition; this
module only maps its column kinds to Spark's types)."""

from __future__ import annotations

from pyspark.sql import types as T

from lockstep.analytics.layout import BLOCKED_KEY_FIELDS, COLUMNS, DATE_COLUMN, HOUR_COLUMN

_SPARK: dict[str, T.DataType] = {
    "string": T.StringType(),
    "int": T.IntegerType(),
    "long": T.LongType(),
    "double": T.DoubleType(),
    "bool": T.BooleanType(),
}


def _spark_type(kind: str) -> T.DataType:
    if kind == "blocked_keys":
        return T.ArrayType(
            T.StructType([T.StructField(n, _SPARK[k]) for n, k in BLOCKED_KEY_FIELDS])
        )
    return _SPARK[kind]


def spark_schema(data_set: str) -> T.StructType:
    """The columns as Spark reads them, with the partition columns ``date`` and ``hour``."""
    return T.StructType(
        [T.StructField(n, _spark_type(k)) for n, k in COLUMNS[data_set]]
        + [
            T.StructField(DATE_COLUMN, T.StringType()),
            T.StructField(HOUR_COLUMN, T.IntegerType()),
        ]
    )
