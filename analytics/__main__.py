"""Run the job on one day of a data set without Django, e.g. through spark-submit on a
cluster (docs/analytics.md §5)::

    python -m lockstep.analytics --uri hdfs://nn:8020/lockstep --date 2026-11-23 --master spark://host:7077
    spark-submit --master spark://host:7077 analytics/__main__.py --uri ... --date ...

Prints the job's result as JSON on stdout (times in ISO 8601, UTC).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from datetime import date

from lockstep.analytics.job import (
    DEFAULT_LAG_THRESHOLD_S,
    DEFAULT_MAX_SAMPLE_GAP_S,
    DEFAULT_STUCK_SECONDS,
    DEFAULT_TOP_N,
    JobOptions,
    run_job,
)
from lockstep.analytics.session import DEFAULT_SHUFFLE_PARTITIONS, SessionOptions, spark_session


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lockstep.analytics", description=__doc__)
    p.add_argument("--uri", required=True, help="the data location (a folder or a URI)")
    p.add_argument("--date", required=True, type=_day, help="the UTC day, YYYY-MM-DD")
    p.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    p.add_argument("--stuck-seconds", type=float, default=DEFAULT_STUCK_SECONDS)
    p.add_argument("--lag-threshold-seconds", type=float, default=DEFAULT_LAG_THRESHOLD_S)
    p.add_argument("--max-sample-gap-seconds", type=float, default=DEFAULT_MAX_SAMPLE_GAP_S)
    p.add_argument("--top", type=int, default=DEFAULT_TOP_N)
    p.add_argument("--shuffle-partitions", type=int, default=DEFAULT_SHUFFLE_PARTITIONS)
    return p


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    options = JobOptions(
        stuck_seconds=args.stuck_seconds,
        lag_threshold_s=args.lag_threshold_seconds,
        max_sample_gap_s=args.max_sample_gap_seconds,
        top_n=args.top,
    )
    session = SessionOptions(shuffle_partitions=args.shuffle_partitions)
    # Under spark-submit the master comes from the submit command (--master None here).
    with spark_session(args.master or "local[*]", options=session) as spark:
        result = run_job(spark, args.uri, args.date, options)
    json.dump(dataclasses.asdict(result), sys.stdout, default=_iso, indent=1)
    sys.stdout.write("\n")


def _iso(value: object) -> str:
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


if __name__ == "__main__":
    main()
