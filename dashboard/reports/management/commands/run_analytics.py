from argparse import ArgumentParser, ArgumentTypeError
from datetime import date
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from dashboard.reports.models import AnalyticsRun
from dashboard.reports.report import report_lines
from dashboard.reports.runner import run_analytics


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


class Command(BaseCommand):
    help = (
        "Run the Spark analytics over one UTC day of the data set (LOCKSTEP_ANALYTICS_URI) "
        "and store the report shown at /analytics/; re-running a day replaces its report."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--date", type=_day, default=None, help="the UTC day, YYYY-MM-DD (default: yesterday)"
        )
        parser.add_argument(
            "--master", default=None, help="Spark master URL (default: settings.SPARK_MASTER)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        run = run_analytics(day=options["date"], master=options["master"])
        for line in report_lines(run):
            self.stdout.write(line)
        if run.status == AnalyticsRun.Status.FAILED:
            raise CommandError(f"analytics run {run.pk} failed: {run.error}")
