"""Run one ordered consumer in the foreground (operators, tests). Stops on SIGINT/SIGTERM
after each queue finished its message in progress and was unlocked. The same as
``lockstep consume`` (lockstep/workers/foreground.py), with the Redis of the settings."""

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from lockstep.workers.errors import LockstepError
from lockstep.workers.foreground import (
    add_consume_arguments,
    consumer_from_options,
    run_until_signalled,
)
from lockstep.workers.redact import mask_url


class Command(BaseCommand):
    help = "Consume a topic in order as one consumer of a group, until interrupted."

    def add_arguments(self, parser: CommandParser) -> None:
        add_consume_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            consumer = consumer_from_options(settings.REDIS_URL, options)
        except LockstepError as exc:
            raise CommandError(mask_url(str(exc))) from None
        run_until_signalled(consumer, self.stdout)
