"""A handler that raises ``HandlerFailure`` says all there is in its message: its record is
one line, at ERROR, without the traceback; any other exception keeps its traceback
(workers/handler_log.py, docs/api.md §10)."""

from __future__ import annotations

import logging

import pytest

from lockstep import HandlerFailure, Message, QueueRef
from lockstep.workers.handler_log import HandlerLog
from lockstep.workers.ordering.base import describe

REF = QueueRef("payments", 3)
HANDLER = "shop.handlers.settle"
MESSAGE = Message("payments", 3, 11, "acct-2", b"{}", {}, produced_at=0.0)


def _raise_and_log(log: HandlerLog, exc: Exception) -> None:
    try:
        raise exc
    except Exception as raised:
        log.raised(REF, "ledger", HANDLER, [MESSAGE], raised, describe(raised))


def _written(caplog: pytest.LogCaptureFixture) -> list[str]:
    formatter = logging.Formatter("%(levelname)s %(message)s")
    return [formatter.format(r) for r in caplog.records if r.name == "lockstep"]


def test_it_logs_a_handler_failure_in_one_line_and_another_exception_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="lockstep")
    log = HandlerLog(interval_s=60.0, clock=iter([0.0, 61.0]).__next__)  # both written

    _raise_and_log(log, HandlerFailure("card declined for acct-2"))
    _raise_and_log(log, RuntimeError("card declined for acct-2"))

    failure, other = _written(caplog)
    assert failure == (
        f"ERROR handler {HANDLER} raised lockstep.workers.errors.HandlerFailure: card declined "
        "for acct-2: topic=payments group=ledger queue=3 offset=11 key='acct-2' attempt=1"
    )
    assert other.splitlines()[0] == (
        f"ERROR handler {HANDLER} raised RuntimeError: card declined "
        "for acct-2: topic=payments group=ledger queue=3 offset=11 key='acct-2' attempt=1"
    )
    assert other.splitlines()[1] == "Traceback (most recent call last):"
    assert "raise exc" in other


def test_it_rate_limits_handler_failures_like_any_other_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="lockstep")
    log = HandlerLog(interval_s=60.0, clock=iter([0.0, 1.0, 2.0, 61.0]).__next__)

    for _ in range(4):
        _raise_and_log(log, HandlerFailure("card declined for acct-2"))

    first, second = _written(caplog)
    assert "not logged" not in first
    assert second.endswith("(2 more failures of this queue since the last record were not logged)")
    assert [len(first.splitlines()), len(second.splitlines())] == [1, 1]
