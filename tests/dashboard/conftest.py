from __future__ import annotations

import pytest
from django.contrib.auth.models import User

VIEWER_PASSWORD = "viewer-password-1"


@pytest.fixture
def viewer(django_user_model: type[User]) -> User:
    """A signed-up user without staff rights: may look at every page, change nothing."""
    return django_user_model.objects.create_user("viewer", password=VIEWER_PASSWORD)
