"""Writing rows into the data set layout (docs/analytics.md §1-2) with pyarrow, on any
file system pyarrow reaches: a local folder, ``file://``, ``s3://`` (``s3a://`` is
``s3://`` to pyarrow), ``hdfs://`` (needs libhdfs where the writer runs).

Used by the Django side's writer and by the benchmark's generator; Spark never writes
here. A batch is one file per (date, hour) partition, named after the batch, written
under a hidden name and renamed, so a reader never sees half a file and writing the same
batch again replaces its files instead of adding to them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from datetime import date

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from lockstep.analytics.layout import TIME_COLUMN, Partition, arrow_schema, day_path, join_uri

_MS_PER_HOUR = 3_600_000


def filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """pyarrow's file system and the path inside it for a data location."""
    if uri.startswith("s3a://"):
        uri = "s3://" + uri[len("s3a://") :]
    if "://" not in uri:
        return pafs.LocalFileSystem(), uri
    return pafs.FileSystem.from_uri(uri)


def _partitions(table: pa.Table, data_set: str) -> Iterator[tuple[Partition, pa.Table]]:
    """The table's rows split by the UTC hour of the data set's time column, in time order;
    rows keep their order within an hour."""
    times = table.column(TIME_COLUMN[data_set])
    if times.null_count:
        raise ValueError(f"{data_set}: {TIME_COLUMN[data_set]} must not be null")
    hours = pc.divide(times, pa.scalar(_MS_PER_HOUR, pa.int64()))
    for hour in sorted(pc.unique(hours).to_pylist()):
        part = table.filter(pc.equal(hours, pa.scalar(hour, pa.int64())))
        yield Partition.of_ms(hour * _MS_PER_HOUR), part


def write_batch(uri: str, data_set: str, table: pa.Table, batch: str) -> list[str]:
    """Write ``table`` (the data set's ``arrow_schema``) as one file per partition, named
    ``part-<batch>.parquet``; return the files' paths. ``batch`` must name the same rows
    every time it is written (e.g. the first cursor position of the batch)."""
    if not table.num_rows:
        return []
    if "/" in batch or batch.startswith((".", "_")):
        raise ValueError(f"batch name {batch!r} must be a plain file name part")
    table = table.cast(arrow_schema(data_set))
    fs, root = filesystem(uri)
    written = []
    for partition, rows in _partitions(table, data_set):
        folder = posixpath.join(root, partition.path(data_set))
        fs.create_dir(folder, recursive=True)
        final = posixpath.join(folder, f"part-{batch}.parquet")
        hidden = posixpath.join(folder, f".part-{batch}.parquet.tmp")
        pq.write_table(rows, hidden, filesystem=fs, compression="zstd")
        fs.move(hidden, final)
        written.append(final)
    return written


def day_uri(uri: str, data_set: str, day: date) -> str:
    """Where Spark finds one day of a data set (the URI's scheme kept as given)."""
    return join_uri(uri, data_set, day_path(day))
