"""For the analytics writer's tests: fixtures (imported by the tests that use them),
reading the written data set back as the job's reader would (pyarrow, Hive partitions),
and storing events in the database with chosen times."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
import redis

from lockstep.dashboard.web.store.models import Event
from lockstep.workers import Producer


@pytest.fixture
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


_ids = itertools.count(1)


def at_ms(ms: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)


def ms_of(text: str) -> int:
    """``2024-03-10T05:30:00.123`` (UTC) as epoch ms."""
    moment = datetime.fromisoformat(text).replace(tzinfo=UTC)
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def store(type_: str, ts_ms: int, **fields: Any) -> Event:
    """One stored event, as the ingester would have stored it."""
    return Event.objects.create(
        stream_id=f"{ts_ms}-{next(_ids)}", type=type_, ts=at_ms(ts_ms), **fields
    )


def files(uri: str, data_set: str) -> list[str]:
    """The data set's files, relative to the data location, sorted."""
    root = Path(uri)
    return sorted(str(p.relative_to(root)) for p in (root / data_set).rglob("*.parquet"))


def rows_by_file(uri: str, data_set: str) -> dict[str, list[dict[str, Any]]]:
    return {f: pq.read_table(Path(uri) / f).to_pylist() for f in files(uri, data_set)}


def rows(uri: str, data_set: str) -> list[dict[str, Any]]:
    """Every row with its ``date`` and ``hour`` partition columns, as Spark would see
    them (Hive partitioning)."""
    if not files(uri, data_set):
        return []
    dataset = pads.dataset(Path(uri) / data_set, format="parquet", partitioning="hive")
    return list(dataset.to_table().to_pylist())
