from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from lockstep.dashboard.web.roles import ADMIN, OPERATOR, VIEWER, grant_role


@pytest.fixture
def viewer(django_user_model: type[User]) -> User:
    """A user with the viewer role: reads everything, acts on nothing."""
    user = django_user_model.objects.create_user("viewer", password="viewer-password-1")
    grant_role(user, VIEWER)
    return user


@pytest.fixture
def operator(django_user_model: type[User]) -> User:
    """A user with the operator role: may see bodies, replay and discard."""
    user = django_user_model.objects.create_user("operator", password="operator-password-1")
    grant_role(user, OPERATOR)
    return user


@pytest.fixture
def admin_user(django_user_model: type[User]) -> User:
    user = django_user_model.objects.create_user("boss", password="boss-password-1")
    grant_role(user, ADMIN)
    return user
