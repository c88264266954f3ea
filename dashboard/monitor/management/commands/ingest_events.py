import signal
import threading
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from dashboard.monitor.ingest import Ingester
from dashboard.monitor.redis_conn import get_redis


class Command(BaseCommand):
    help = "Ingest runtime events from Redis into the database and push live updates."

    def handle(self, *args: Any, **options: Any) -> None:
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        ingester = Ingester(get_redis(), push_interval=settings.LOCKSTEP_PUSH_INTERVAL)
        self.stdout.write("ingesting events")
        self.stdout.flush()
        ingester.run_forever(stop)
        self.stdout.write(f"stopped after storing {ingester.stored} events")
