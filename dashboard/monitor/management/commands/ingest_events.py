"""Run the event ingester in the foreground until SIGINT/SIGTERM (see
``dashboard.monitor.ingest`` for what it guarantees across kills and outages)."""

import signal
import threading
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from lockstep.dashboard.monitor.ingest import Ingester
from lockstep.dashboard.web.redis_conn import get_redis


class Command(BaseCommand):
    help = "Ingest runtime events from Redis into the database and push live updates."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--batch",
            type=int,
            default=1000,
            help="most events stored per transaction (default 1000)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        ingester = Ingester(
            get_redis(),
            batch=max(1, options["batch"]),
            push_interval=settings.LOCKSTEP_PUSH_INTERVAL,
        )
        self.stdout.write("ingesting events")
        self.stdout.flush()
        ingester.run_forever(stop)
        self.stdout.write(f"stopped after storing {ingester.stored} events")
