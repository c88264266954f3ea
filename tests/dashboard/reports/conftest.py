from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from workers import Producer


@pytest.fixture(autouse=True)
def analytics_uri(settings: Any, tmp_path: Path, redis_client: redis.Redis) -> str:
    """The data set in a per-test folder, on a flushed Redis (no writer lock, topic or
    stream left by another test)."""
    settings.LOCKSTEP_ANALYTICS_URI = str(tmp_path / "analytics")
    return str(settings.LOCKSTEP_ANALYTICS_URI)


@pytest.fixture
def producer(redis_url: str) -> Iterator[Producer]:
    p = Producer(redis_url)
    yield p
    p.close()
