from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.store.models import Topic
from lockstep.workers.errors import LockstepError
from lockstep.workers.topics import create_topic


class Command(BaseCommand):
    help = "Create a topic with a fixed number of queues (idempotent for the same count)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--queues", type=int, default=8)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            topic = create_topic(get_redis(), options["name"], options["queues"])
        except LockstepError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"topic {topic.name}: {topic.queues} queues")
        try:
            Topic.objects.update_or_create(name=topic.name, defaults={"queues": topic.queues})
        except DatabaseError as exc:
            # The topic lives in Redis; the admin's copy is only a convenience, and a
            # consumer host may have no migrated database at all.
            self.stderr.write(f"note: the admin's list of topics was not updated ({exc})")
