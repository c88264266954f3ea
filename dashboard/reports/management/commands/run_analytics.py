from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from dashboard.reports.models import AnalyticsRun
from dashboard.reports.report import report_lines
from dashboard.reports.runner import DEFAULT_SINCE_HOURS, run_analytics


class Command(BaseCommand):
    help = (
        "Export the last hours of events, run the Spark lag analytics on them and store "
        "the per-queue summary shown at /analytics/."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--master", default=None, help="Spark master URL (default: settings.SPARK_MASTER)"
        )
        parser.add_argument(
            "--since-hours",
            type=float,
            default=DEFAULT_SINCE_HOURS,
            help="analyse events of this many hours before now (default 24)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        since_hours = options["since_hours"]
        if since_hours <= 0:
            raise CommandError(f"--since-hours must be positive, got {since_hours}")
        run = run_analytics(master=options["master"], since_hours=since_hours)
        for line in report_lines(run):
            self.stdout.write(line)
        if run.status == AnalyticsRun.Status.FAILED:
            raise CommandError(f"analytics run {run.pk} failed: {run.error}")
