"""The site's roles: Django groups made by the dead-letter app's migration ``0002_roles``
(which lists their permissions; the permissions stay named ``deadletters.*``, on that
app's model); a user holds at most one of them.

- ``viewer``: reads everything (bodies and headers too, unless
  ``LOCKSTEP_HIDE_BODIES_FROM_VIEWERS``);
- ``operator``: also sees bodies, replays, discards, acknowledges;
- ``admin``: also manages users, their roles and topics in the Django admin (staff).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import (
    AbstractBaseUser,
    AnonymousUser,
    Group,
    PermissionsMixin,
    User,
)
from django.db import transaction

VIEWER, OPERATOR, ADMIN = "viewer", "operator", "admin"
ROLES = (VIEWER, OPERATOR, ADMIN)

VIEW_BODY = "deadletters.view_body"
REPLAY = "deadletters.replay_deadletter"
DISCARD = "deadletters.discard_deadletter"
ACKNOWLEDGE = "deadletters.acknowledge_deadletter"


class UnknownRole(ValueError):
    pass


def grant_role(user: User, role: str) -> None:
    """Give ``user`` exactly ``role`` (its other roles are taken away; groups that are not
    roles are kept). ``admin`` makes the user staff, so it can reach the Django admin;
    another role takes staff away again, except from a superuser."""
    if role not in ROLES:
        raise UnknownRole(f"unknown role {role!r} (one of: {', '.join(ROLES)})")
    group = Group.objects.filter(name=role).first()
    if group is None:
        raise UnknownRole(f"role {role!r} does not exist in the database: run migrate")
    with transaction.atomic():
        user.groups.remove(*Group.objects.filter(name__in=ROLES).exclude(pk=group.pk))
        user.groups.add(group)
        user.is_staff = role == ADMIN or user.is_superuser
        user.save(update_fields=["is_staff"])


def has_perm(user: AbstractBaseUser | AnonymousUser, permission: str) -> bool:
    """Whether ``user`` holds ``permission`` (Django's ``has_perm``: through its role's
    group, or as a superuser); an anonymous user holds none."""
    return isinstance(user, PermissionsMixin) and user.has_perm(permission)


def may_see_bodies(user: AbstractBaseUser | AnonymousUser) -> bool:
    """Bodies and headers are shown to every signed-in user unless
    ``LOCKSTEP_HIDE_BODIES_FROM_VIEWERS``; then only to holders of ``view_body``."""
    if not settings.LOCKSTEP_HIDE_BODIES_FROM_VIEWERS:
        return True
    return has_perm(user, VIEW_BODY)
