"""The export contract between the Django side (writer) and the Spark job (reader).

An export file is JSON lines, one event per line, one object per ``Event`` row::

    {"id": "1718000000000-0", "type": "lag_sampled", "ts_ms": 1718000000000,
     "topic": "orders", "group": "mailer", "queue": 3, "key": "", "token": null,
     "consumer": "", "details": "{\\"lag\\":12,\\"time_lag_s\\":1.5, ...}"}

``ts_ms`` is epoch milliseconds (UTC), the runtime's own unit, so no timestamp format or
host time zone is involved. ``details`` is the event's details as a JSON *string*, not a
nested object: the export stays a faithful copy of the event log whatever an event's
details hold, and the job decides what it needs by parsing that string against
:data:`DETAILS_SCHEMA`. A details value that is not an object, or a field of the wrong
type, parses to null there; the transforms report such rows as malformed instead of
failing the job.
"""

from __future__ import annotations

from pyspark.sql import types as T

# Set by the reader on a line that is not a JSON object matching EVENT_SCHEMA.
CORRUPT_COLUMN = "_corrupt_record"

EVENT_SCHEMA = T.StructType(
    [
        T.StructField("id", T.StringType()),
        T.StructField("type", T.StringType()),
        T.StructField("ts_ms", T.LongType()),
        T.StructField("topic", T.StringType()),
        T.StructField("group", T.StringType()),
        T.StructField("queue", T.IntegerType()),
        T.StructField("key", T.StringType()),
        T.StructField("token", T.LongType()),
        T.StructField("consumer", T.StringType()),
        T.StructField("details", T.StringType()),
    ]
)

# The union of the details fields the transforms read, by event type:
#   lag_sampled      max_offset, committed_offset, lag, time_lag_s
#   offset_committed from_offset, offset, commits
# Offsets and counts are integers: a float such as 5.0 does not parse (null), on purpose,
# since an offset that is not an integer means the writer is broken.
DETAILS_SCHEMA = T.StructType(
    [
        T.StructField("max_offset", T.LongType()),
        T.StructField("committed_offset", T.LongType()),
        T.StructField("lag", T.LongType()),
        T.StructField("time_lag_s", T.DoubleType()),
        T.StructField("from_offset", T.LongType()),
        T.StructField("offset", T.LongType()),
        T.StructField("commits", T.LongType()),
    ]
)

EXPORT_FIELDS: tuple[str, ...] = tuple(field.name for field in EVENT_SCHEMA.fields)

# Event type names, as written by workers/events.py and dashboard/monitor/tasks.py.
LAG_SAMPLED = "lag_sampled"
OFFSET_COMMITTED = "offset_committed"
CONSUME_FAILED = "consume_failed"
DEAD_LETTERED = "dead_lettered"
QUEUE_EVENT_TYPES = (LAG_SAMPLED, OFFSET_COMMITTED, CONSUME_FAILED, DEAD_LETTERED)
