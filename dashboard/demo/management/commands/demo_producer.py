import signal
import threading
from typing import Any

import redis
from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from lockstep.dashboard.demo.producer import run_demo_producer
from lockstep.dashboard.env import tell_stores
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.store.models import Topic
from lockstep.workers.topics import create_topic


class Command(BaseCommand):
    help = "Send the demo order-lifecycle workload (creates the topic if needed)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--topic", default="orders")
        parser.add_argument("--queues", type=int, default=8)
        parser.add_argument("--rate", type=float, default=50.0, help="messages per second")

    def handle(self, *args: Any, **options: Any) -> None:
        tell_stores(self.stderr)
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        if not _create_topic_when_redis_answers(options["topic"], options["queues"], stop):
            return
        Topic.objects.update_or_create(
            name=options["topic"], defaults={"queues": options["queues"]}
        )
        self.stdout.write(f"demo producer: {options['rate']:.0f} msg/s to {options['topic']}")
        self.stdout.flush()
        sent = run_demo_producer(settings.REDIS_URL, options["topic"], options["rate"], stop)
        self.stdout.write(f"demo producer sent {sent} messages")


def _create_topic_when_redis_answers(name: str, queues: int, stop: threading.Event) -> bool:
    """Create the topic (idempotent) once Redis answers; False when stopped first. A
    Redis that is away or stalled at start-up is waited for, not a reason to exit."""
    while not stop.is_set():
        try:
            create_topic(get_redis(), name, queues)
            return True
        except (redis.ConnectionError, redis.TimeoutError):
            stop.wait(0.2)
    return False
