"""Analytics benchmark: the nightly Spark job over one synthetic day (docs/analytics.md §6).

- **Generate**: ``events`` rows in total (about 88 % messages, 10 % events, 2 % samples;
  ``bench.analytics_data``) for yesterday (UTC), written in the real Parquet layout with
  ``analytics.storage.write_batch`` under ``uri``, or under a temporary folder that is
  removed afterwards.
- **Job**: ``analytics.job.run_job`` for that day in one SparkSession (``local[*]``
  unless told), the whole job: extract, transforms and the collects of every result.
- **Bare aggregation**: in the same session, the day's three data sets read with their
  schema, grouped by (topic, queue), counted and collected: what any job over these files
  pays (listing, Parquet decoding, a shuffle, scheduling). ``ratio`` = job / bare.

Both run ``repeats`` times, alternating; medians are reported. Memory: the Python
driver's peak RSS while Spark runs (``getrusage``; the peak is reset through
``/proc/self/clear_refs`` once the data is written, so generating it does not count;
that peak is ``generate_peak_rss_mb``) and the Spark JVM's (``VmHWM``; in local mode the
executors run inside it). Targets: ``job_s`` ≤ 90 at 10,000,000 rows, ``ratio`` ≤ 3.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import resource
import shutil
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
from pyspark.sql import SparkSession

from bench.analytics_data import MIN_ROWS, generate, planted
from bench.analytics_data.topology import KEYS
from lockstep.analytics.job import JobOptions, JobResult, run_job
from lockstep.analytics.layout import DATA_SETS, join_uri
from lockstep.analytics.session import SessionOptions, spark_session
from lockstep.analytics.spark_layout import spark_schema
from lockstep.analytics.storage import day_uri, filesystem

DEFAULT_EVENTS = 10_000_000
APP_NAME = "lockstep-bench-analytics"
TARGETS = {"job_s": 90.0, "job_s_at_events": DEFAULT_EVENTS, "ratio": 3.0}

__all__ = ["DEFAULT_EVENTS", "MIN_ROWS", "LocationInUse", "run"]


class LocationInUse(Exception):
    """The data location already holds data of the benchmark's day."""


def run(
    events: int = DEFAULT_EVENTS,
    uri: str | None = None,
    repeats: int = 3,
    master: str = "local[*]",
    session_options: SessionOptions | None = None,
    job_options: JobOptions | None = None,
) -> dict[str, Any]:
    started = time.monotonic()
    day = datetime.now(UTC).date() - timedelta(days=1)
    result: dict[str, Any] = {"events": events, "day": day.isoformat(), "uri": uri}
    with _location(uri, day) as location:
        began = time.perf_counter()
        generated = generate(location, events, day)
        result["generate_s"] = round(time.perf_counter() - began, 2)
        result["generate_peak_rss_mb"] = _peak_rss_mb()
        plan = generated.plan
        result.update(
            rows=generated.rows,
            queues=plan.topo.cells,
            queue_groups=plan.topo.qgs,
            keys=KEYS,
            sample_interval_s=plan.sizes.interval_ms / 1000,
            batches=generated.batches,
            files=generated.files,
        )
        peak_reset = _reset_peak_rss()
        with spark_session(master, APP_NAME, session_options) as spark:
            result.update(_measure(spark, location, day, repeats, job_options, events))
            result["peak_jvm_rss_mb"] = _jvm_peak_rss_mb(spark)
        result["peak_driver_rss_mb"] = _peak_rss_mb()
        result["peak_driver_rss_includes_generation"] = not peak_reset
    result["cores"] = os.cpu_count()
    result["planted"] = _planted_summary(planted(plan))
    result["targets"] = TARGETS
    result["targets_met"] = {
        "job_s": result["job_s"] <= TARGETS["job_s"] if events >= DEFAULT_EVENTS else None,
        "ratio": result["ratio"] <= TARGETS["ratio"],
    }
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    return result


def _measure(
    spark: SparkSession,
    uri: str,
    day: date,
    repeats: int,
    job_options: JobOptions | None,
    rows: int,
) -> dict[str, Any]:
    job_runs: list[float] = []
    bare_runs: list[float] = []
    job: JobResult | None = None
    for _ in range(repeats):
        began = time.perf_counter()
        job = run_job(spark, uri, day, job_options)
        job_runs.append(time.perf_counter() - began)
        began = time.perf_counter()
        counted = bare_aggregation(spark, uri, day)
        bare_runs.append(time.perf_counter() - began)
        if counted != rows:
            raise RuntimeError(f"the bare aggregation counted {counted} rows of {rows}")
    assert job is not None
    job_s, bare_s = statistics.median(job_runs), statistics.median(bare_runs)
    return {
        "spark_master": spark.sparkContext.master,
        "spark_default_parallelism": spark.sparkContext.defaultParallelism,
        "repeats": repeats,
        "job_s": round(job_s, 2),
        "job_runs_s": [round(s, 2) for s in job_runs],
        "bare_aggregation_s": round(bare_s, 2),
        "bare_aggregation_runs_s": [round(s, 2) for s in bare_runs],
        "ratio": round(job_s / bare_s, 2),
        "read": {
            "messages": job.messages_read,
            "events": job.events_read,
            "samples": job.samples_read,
        },
        "result_rows": {
            f.name: len(getattr(job, f.name))
            for f in dataclasses.fields(job)
            if isinstance(getattr(job, f.name), list)
        },
    }


def bare_aggregation(spark: SparkSession, uri: str, day: date) -> int:
    """Read the day of each data set as the job's extract does (its schema, only the
    day's partitions), count rows per (topic, queue), collect; the rows counted."""
    counted = 0
    for data_set in DATA_SETS:
        frame = (
            spark.read.schema(spark_schema(data_set))
            .option("basePath", join_uri(uri, data_set))
            .parquet(day_uri(uri, data_set, day))
        )
        counted += sum(row["count"] for row in frame.groupBy("topic", "queue").count().collect())
    return counted


@contextmanager
def _location(uri: str | None, day: date) -> Iterator[str]:
    """``uri`` when given (kept afterwards; it must not hold data of ``day`` already,
    or the day would be counted twice), else a temporary folder removed afterwards."""
    if uri is not None:
        fs, root = filesystem(uri)
        for data_set in DATA_SETS:
            where = day_uri(root, data_set, day)
            if fs.get_file_info(where).type != pafs.FileType.NotFound:
                raise LocationInUse(f"{join_uri(uri, data_set)} already has data of {day}")
        yield uri
        return
    folder = tempfile.mkdtemp(prefix="lockstep-bench-analytics-")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _peak_rss_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024  # KiB on Linux


def _reset_peak_rss() -> bool:
    """Give freed memory back (Python's, Arrow's pool) and reset this process's peak RSS
    to its current RSS (Linux ≥ 4.0); False if the peak could not be reset."""
    gc.collect()
    pa.default_memory_pool().release_unused()
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _jvm_peak_rss_mb(spark: SparkSession) -> int | None:
    """The Spark driver JVM's peak RSS (``VmHWM``); None where /proc cannot tell."""
    jvm = spark.sparkContext._jvm
    if jvm is None:
        return None
    pid = jvm.java.lang.ProcessHandle.current().pid()
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return None


def _planted_summary(found: dict[str, Any]) -> dict[str, Any]:
    episodes = found.pop("episodes")
    found["episodes"] = dict(Counter(e["level"] for e in episodes))
    found["open_episodes"] = sum(1 for e in episodes if e["open"])
    return found
