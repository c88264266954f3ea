"""``LOCKSTEP_EVENT_SHARDS`` defaults to 1, which writes every event to ``ls:events`` as
before sharding (an existing deployment keeps its stream and its ingester cursor) and
registers no shard; a value that is not a whole number ≥ 1 is refused at once."""

from __future__ import annotations

import pytest
import redis

from lockstep.workers import events as ev
from lockstep.workers import keys
from lockstep.workers.errors import ConfigurationError
from lockstep.workers.events import EventLog, event_shards_from_env, event_streams, read_all_events
from lockstep.workers.redis_types import entries


def test_the_default_writes_every_event_to_the_legacy_stream(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOCKSTEP_EVENT_SHARDS", raising=False)
    log = EventLog(redis_client)
    for q in range(6):
        log.emit(ev.LOCK_ACQUIRED, topic="orders", group="g", queue=q, token=q + 1)
    log.emit(ev.CONSUMER_STOPPED, consumer="c1")
    log.stop()

    assert event_shards_from_env() == 1
    assert redis_client.xlen(keys.EVENTS) == 7
    assert redis_client.exists(keys.EVENT_STREAMS) == 0
    assert event_streams(redis_client) == [keys.EVENTS]
    assert [e["queue"] for e in read_all_events(redis_client)] == [0, 1, 2, 3, 4, 5, None]
    raw_ids = [i.decode() for i, _ in entries(redis_client.xrange(keys.EVENTS))]
    assert [e["id"] for e in read_all_events(redis_client)] == raw_ids, "IDs as before"


@pytest.mark.parametrize("value", ["0", "-2", "four", "2.5"])
def test_a_bad_shard_count_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("LOCKSTEP_EVENT_SHARDS", value)
    with pytest.raises(ConfigurationError, match="LOCKSTEP_EVENT_SHARDS"):
        event_shards_from_env()
    with pytest.raises(ConfigurationError, match="LOCKSTEP_EVENT_SHARDS"):
        EventLog(redis.Redis())  # a consumer would not start
