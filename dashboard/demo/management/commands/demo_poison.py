"""Fix or break the demo's billing handler (``dashboard.demo.handle_billing``): while it
is broken, every ``LOCKSTEP_DEMO_POISON_EVERY``-th order fails until dead-lettered."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from lockstep.dashboard.demo.handlers import FIXED_FLAG, poison_every
from lockstep.dashboard.env import tell_stores
from lockstep.dashboard.web.redis_conn import get_redis


class Command(BaseCommand):
    help = "Fix or break the demo billing handler's poison orders: demo_poison fix|break|status"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=("fix", "break", "status"))

    def handle(self, *args: Any, **options: Any) -> None:
        tell_stores(self.stderr)
        client = get_redis()
        if options["action"] == "fix":
            client.set(FIXED_FLAG, 1)
        elif options["action"] == "break":
            client.delete(FIXED_FLAG)
        fixed = bool(client.exists(FIXED_FLAG))
        every = poison_every()
        state = "fixed" if fixed else f"broken for every {every}th order" if every else "off"
        self.stdout.write(f"demo billing handler: {state}")
