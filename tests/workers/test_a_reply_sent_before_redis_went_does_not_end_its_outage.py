"""A success of a call that began before an outage opened is a reply Redis sent before it
went, handled by its thread after another thread's failure: the outage stays open, and
the first success of a call begun after it opened ends it (told once)."""

from __future__ import annotations

import logging

import pytest
import redis

from lockstep.workers import outage
from lockstep.workers.outage import Outage


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_call_begun_before_the_outage_leaves_it_open_and_a_later_one_ends_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock = _Clock()
    monkeypatch.setattr(outage.time, "monotonic", clock)
    record = Outage(logging.getLogger("test-outage"))
    caplog.set_level(logging.WARNING, logger="test-outage")
    begun_before = clock.now

    clock.now += 0.25
    assert record.failed(redis.ConnectionError("Connection closed by server."), "live pushes")
    clock.now += 0.25
    record.ok(begun_before)
    still_down = record.down
    begun_after = clock.now
    clock.now += 1.5
    record.ok(begun_after)

    messages = [r.getMessage() for r in caplog.records]
    assert still_down
    assert not record.down
    assert sum("unreachable" in m for m in messages) == 1
    assert [m for m in messages if "reachable again" in m] == [
        "lockstep: Redis is reachable again after 1.8 s"
    ]
