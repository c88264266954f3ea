from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


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
