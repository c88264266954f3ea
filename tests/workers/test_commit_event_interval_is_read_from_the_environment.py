"""``LOCKSTEP_COMMIT_EVENT_INTERVAL`` (seconds) sets the commit-event interval: 5 s when
unset, 0 for one event per commit, and a value that is not a number, or is negative, is
refused loudly at start-up rather than ignored."""

from __future__ import annotations

import pytest
import redis

from lockstep.workers import events as ev
from lockstep.workers.config import Timings
from lockstep.workers.errors import ConfigurationError
from lockstep.workers.events import EventLog
from lockstep.workers.refs import QueueRef
from tests.workers.harness import events


def test_it_defaults_to_five_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCKSTEP_COMMIT_EVENT_INTERVAL", raising=False)

    assert Timings.from_env().commit_event_interval_s == 5.0


def test_it_takes_the_interval_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCKSTEP_COMMIT_EVENT_INTERVAL", "2.5")

    assert Timings.from_env().commit_event_interval_s == 2.5


@pytest.mark.parametrize("raw", ["soon", "-1"])
def test_it_refuses_a_value_that_is_not_a_non_negative_number(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("LOCKSTEP_COMMIT_EVENT_INTERVAL", raw)

    with pytest.raises(ConfigurationError, match="LOCKSTEP_COMMIT_EVENT_INTERVAL"):
        Timings.from_env()


def test_it_writes_one_event_per_commit_at_zero(
    monkeypatch: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    monkeypatch.setenv("LOCKSTEP_COMMIT_EVENT_INTERVAL", "0")
    log = EventLog(redis_client)  # no interval given: the environment's

    for offset in (1, 2, 3):
        log.committed(QueueRef("orders", 0), "mailer", 1, "c1", offset)
    log.flush()

    written = [e["details"] for e in events(redis_client, ev.OFFSET_COMMITTED)]
    assert written == [{"from_offset": o, "offset": o, "commits": 1} for o in (1, 2, 3)]
