from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User

VIEWER_PASSWORD = "viewer-password-1"


@pytest.fixture(autouse=True)
def dashboard_redis(redis_url: str, settings: Any) -> Iterator[str]:
    """Point the web side (Redis client and channel layer) at the suite's redis-server."""
    settings.REDIS_URL = redis_url
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [redis_url], "capacity": 1000, "expiry": 30},
        }
    }
    yield redis_url


@pytest.fixture
def viewer(django_user_model: type[User]) -> User:
    """A signed-up user without staff rights: may look at every page, change nothing."""
    return django_user_model.objects.create_user("viewer", password=VIEWER_PASSWORD)
