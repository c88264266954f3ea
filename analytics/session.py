"""Building (or reusing) the SparkSession the job runs in."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

# A day's results are grouped by at most queues by hours; Spark's default of 200 shuffle
# partitions would spend more time scheduling empty tasks than computing on a few cores.
# A cluster run sets more (LOCKSTEP_SPARK_SHUFFLE_PARTITIONS).
DEFAULT_SHUFFLE_PARTITIONS = 8
# Only takes effect when this process launches the JVM (local mode, i.e. the default);
# on a cluster the driver is already running and its memory is set there.
DEFAULT_DRIVER_MEMORY = "2g"


@dataclass(frozen=True)
class SessionOptions:
    shuffle_partitions: int = DEFAULT_SHUFFLE_PARTITIONS
    driver_memory: str = DEFAULT_DRIVER_MEMORY
    conf: dict[str, str] = field(default_factory=dict)  # more Spark options


# Py4J logs every gateway connection at INFO; under a root logger at INFO (Django's
# default here) that floods worker logs, and at interpreter exit it writes to closed streams.
logging.getLogger("py4j").setLevel(logging.WARNING)


def build_session(
    master: str,
    app_name: str = "lockstep-analytics",
    options: SessionOptions | None = None,
) -> SparkSession:
    """Return the active SparkSession if there is one, else start one on ``master``.

    Spark allows one SparkContext per process, so an active session wins over the
    arguments (its master is ``session.sparkContext.master``); that is what lets the test
    suite, or a caller that already runs Spark, share one JVM instead of starting another.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    opts = options or SessionOptions()
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        # A batch job inside a Celery worker: nobody watches a UI, and its port would
        # collide between workers on one host.
        .config("spark.ui.enabled", "false")
        # The progress bar would be interleaved with the command's report on stdout.
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(opts.shuffle_partitions))
        .config("spark.driver.memory", opts.driver_memory)
        # Times are epoch milliseconds; pin the zone so any rendering is host-independent.
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in opts.conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


@contextmanager
def spark_session(
    master: str, app_name: str = "lockstep-analytics", options: SessionOptions | None = None
) -> Iterator[SparkSession]:
    """A session for one run: reuses an active one (left running), or starts one and stops
    it afterwards so a worker process does not keep an idle JVM between nightly runs."""
    existing = SparkSession.getActiveSession()
    session = existing if existing is not None else build_session(master, app_name, options)
    try:
        yield session
    finally:
        if existing is None:
            session.stop()
