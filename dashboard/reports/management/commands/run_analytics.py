from argparse import ArgumentParser, ArgumentTypeError
from datetime import date
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from lockstep.dashboard.reports.models import AnalyticsRun
from lockstep.dashboard.reports.report import report_lines
from lockstep.dashboard.reports.runner import run_analytics
from lockstep.dashboard.reports.writer import write_new_data


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
        parser.add_argument(
            "--write-first",
            action="store_true",
            help="append what is new (events, samples, messages) to the data set first, as "
            "the beat task does every LOCKSTEP_ANALYTICS_WRITE_SECONDS",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["write_first"]:
            written = write_new_data()
            self.stdout.write(
                "Appended to the data set: "
                + ", ".join(f"{n} {name}" for name, n in written.items())
            )
        day = options["date"]
        if isinstance(day, str):  # call_command(date="…") skips the parser's type
            try:
                day = _day(day)
            except ArgumentTypeError as exc:
                raise CommandError(str(exc)) from None
        run = run_analytics(day=day, master=options["master"])
        for line in report_lines(run):
            self.stdout.write(line)
        if run.status == AnalyticsRun.Status.FAILED:
            raise CommandError(f"analytics run {run.pk} failed: {run.error}")
