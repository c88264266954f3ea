"""Run the event ingester in the foreground until SIGINT/SIGTERM (see
``dashboard.monitor.ingest`` for what it guarantees across kills and outages). Any number
may run: they split the event streams through leases in Redis
(``dashboard.monitor.ingest_leases``), and a stopped one's streams go to the others."""

import signal
import threading
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from lockstep.dashboard.monitor.ingest import Ingester
from lockstep.dashboard.monitor.ingest_leases import StreamLeases, lease_seconds_from_env
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
        client = get_redis()
        leases = StreamLeases(client, lease_seconds_from_env())
        ingester = Ingester(
            client,
            batch=max(1, options["batch"]),
            push_interval=settings.LOCKSTEP_PUSH_INTERVAL,
            leases=leases,
            background=True,
        )
        self.stdout.write(f"ingesting events as {leases.me}")
        self.stdout.flush()
        ingester.run_forever(stop)
        self.stdout.write(f"stopped after storing {ingester.stored} events")
