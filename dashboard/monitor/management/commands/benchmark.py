import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

BENCHMARKS = ("runtime", "ordering", "dashboard", "deadletters")


class Command(BaseCommand):
    help = "Run a benchmark on a private redis-server and print its results as JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", choices=BENCHMARKS)
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument(
            "--messages",
            type=int,
            default=None,
            help="runtime: messages per run (20,000); ordering: messages "
            "of the no-op cases (60,000); dashboard: messages per "
            "events on/off run (200,000); deadletters: dead letters in the "
            "group (100,000)",
        )
        parser.add_argument(
            "--repeats",
            type=int,
            default=None,
            help="runs per case, medians reported (runtime 3, ordering 5, "
            "dashboard 5 of each of on and off, deadletters 15 requests per filter)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        messages = options["messages"]
        if messages is not None and messages < 100:
            raise CommandError("--messages must be at least 100")
        repeats = options["repeats"]
        if repeats is not None and repeats < 1:
            raise CommandError("--repeats must be at least 1")
        if options["name"] == "deadletters":
            from bench import deadletters

            result = deadletters.run(messages or 100_000, repeats or 15)
        elif options["name"] == "dashboard":
            from bench import dashboard

            result = dashboard.run(messages or 200_000, repeats or 5)
        elif options["name"] == "ordering":
            from bench import ordering

            result = ordering.run(messages or 60_000, repeats or 5)
        else:
            from bench import runtime

            result = runtime.run(messages or 20_000, repeats or 3)
        if options["json"]:
            self.stdout.write(json.dumps(result))
        else:
            for k, v in result.items():
                self.stdout.write(f"{k}: {v}")
