from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from tests.conftest import make_roles

VIEWER_PASSWORD = "viewer-password-1"


@pytest.fixture
def viewer(django_user_model: type[User]) -> User:
    """A signed-up user without staff rights: may look at every page, change nothing."""
    return django_user_model.objects.create_user("viewer", password=VIEWER_PASSWORD)


@pytest.fixture
def roles(transactional_db: None) -> None:
    """The role groups and their permissions, made again as the data migrations make them
    (``tests/conftest.py`` also makes them after every flush)."""
    from django.apps import apps

    make_roles(apps)
