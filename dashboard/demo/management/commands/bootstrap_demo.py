"""``manage.py bootstrap_demo``: the demo's users, created or reset, with their logins
printed (``make run`` shows them): an admin (superuser, role ``admin``) and a viewer (role
``viewer``: reads every page, may not replay or discard)."""

import os
import secrets
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand

from lockstep.dashboard.web.roles import ADMIN, VIEWER, grant_role


class Command(BaseCommand):
    help = "Create (or reset) the demo admin and viewer users and print their logins."

    def handle(self, *args: Any, **options: Any) -> None:
        admin = self._user("DEMO_ADMIN_USER", "DEMO_ADMIN_PASSWORD", "admin", superuser=True)
        grant_role(admin[0], ADMIN)
        viewer = self._user("DEMO_VIEWER_USER", "DEMO_VIEWER_PASSWORD", "viewer", superuser=False)
        grant_role(viewer[0], VIEWER)
        url = f"http://127.0.0.1:{os.environ.get('PORT', '') or 8000}/"
        self.stdout.write(f"Demo login: {admin[1]} / {admin[2]}  ({url})")
        self.stdout.write(f"Demo viewer: {viewer[1]} / {viewer[2]}  (may look, may not act)")

    def _user(
        self, user_env: str, password_env: str, default: str, *, superuser: bool
    ) -> tuple[User, str, str]:
        username = os.environ.get(user_env, "").strip() or default
        password = os.environ.get(password_env, "") or secrets.token_urlsafe(12)
        user, _ = User.objects.get_or_create(username=username)
        user.is_staff = superuser
        user.is_superuser = superuser
        user.set_password(password)
        user.save()
        return user, username, password
