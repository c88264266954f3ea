"""The Spark side of an analytics run (docs/analytics.md §5): the job's options read
from the settings, and the job itself. It needs the ``[analytics]`` extra (PySpark and a
Java 17 runtime); ``runner`` imports it only when a run starts, so the dashboard runs
and writes the data set without it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from django.conf import settings

from lockstep.analytics.job import JobOptions, JobResult, run_job
from lockstep.analytics.session import SessionOptions, spark_session

APP_NAME = "lockstep-analytics"


def session_options() -> SessionOptions:
    return SessionOptions(
        shuffle_partitions=settings.LOCKSTEP_SPARK_SHUFFLE_PARTITIONS,
        driver_memory=settings.LOCKSTEP_SPARK_DRIVER_MEMORY,
        conf=dict(settings.LOCKSTEP_SPARK_CONF),
    )


def job_options() -> JobOptions:
    return JobOptions(
        stuck_seconds=settings.LOCKSTEP_STUCK_AFTER_SECONDS,
        lag_threshold_s=settings.LOCKSTEP_ALERT_LAG_SECONDS,
        max_sample_gap_s=settings.LOCKSTEP_ANALYTICS_MAX_SAMPLE_GAP_SECONDS,
        top_n=settings.LOCKSTEP_ANALYTICS_TOP_N,
    )


def analyse(
    master: str, uri: str, day: date, progress: Callable[[str, int], None]
) -> tuple[str, JobResult]:
    """Run the job over ``day`` of the data set at ``uri``; returns the master the session
    actually used (an already active session is reused) and the result."""
    with spark_session(master, APP_NAME, session_options()) as spark:
        used = spark.sparkContext.master or master
        return used, run_job(spark, uri, day, job_options(), progress)
