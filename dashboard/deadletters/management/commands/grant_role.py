from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from lockstep.dashboard.web.roles import ROLES, UnknownRole, grant_role


class Command(BaseCommand):
    help = f"Give a user one role ({', '.join(ROLES)}), replacing the role it had."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user", help="user name")
        parser.add_argument("role", help=" | ".join(ROLES))

    def handle(self, *args: Any, **options: Any) -> None:
        name, role = options["user"], options["role"]
        user = get_user_model().objects.filter(username=name).first()
        if user is None:
            raise CommandError(f"no user {name!r}")
        try:
            grant_role(user, role)
        except UnknownRole as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{name} is now {role}")
