"""Run the job on an export file without Django, e.g. through spark-submit on a cluster:

    python -m analytics var/analytics/events-run7.jsonl --master spark://host:7077

Prints the result as JSON on stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import json

from analytics.job import DEFAULT_STUCK_SECONDS, run_job
from analytics.session import spark_session


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m analytics", description=__doc__)
    parser.add_argument("path", help="a JSON-lines event export")
    parser.add_argument("--master", default="local[*]", help="Spark master URL")
    parser.add_argument("--stuck-seconds", type=float, default=DEFAULT_STUCK_SECONDS)
    args = parser.parse_args(argv)
    with spark_session(args.master) as spark:
        result = run_job(spark, args.path, stuck_seconds=args.stuck_seconds)
    print(json.dumps(dataclasses.asdict(result), default=str, indent=2))


if __name__ == "__main__":
    main()
