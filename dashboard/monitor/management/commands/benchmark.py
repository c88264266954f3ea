import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

BENCHMARKS = ("runtime",)


class Command(BaseCommand):
    help = "Run a benchmark on a private redis-server and print its results as JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", choices=BENCHMARKS)
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--messages", type=int, default=20_000)
        parser.add_argument("--repeats", type=int, default=3)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["messages"] < 100:
            raise CommandError("--messages must be at least 100")
        from workers.bench import runtime

        result = runtime.run(options["messages"], options["repeats"])
        if options["json"]:
            self.stdout.write(json.dumps(result))
        else:
            for k, v in result.items():
                self.stdout.write(f"{k}: {v}")
