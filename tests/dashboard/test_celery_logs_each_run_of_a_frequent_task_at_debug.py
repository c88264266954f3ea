"""Celery's INFO lines for each run of a task beat sends every few seconds are DEBUG
records, through the settings' logging configuration (dashboard/task_log.py): beat's
``Sending due task``, the worker's ``received`` and ``succeeded``. The hourly and nightly
tasks' lines and every task's failure stay as they were."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from celery.app import trace
from celery.worker import strategy

from lockstep.dashboard.settings import CELERY_BEAT_SCHEDULE

SYNC, PRUNE = "lockstep-sync-dead-letters", "lockstep-prune-events"  # every 2 s; hourly
BEAT = logging.getLogger("celery.beat")  # celery/beat.py's


def _task(entry: str) -> str:
    return str(CELERY_BEAT_SCHEDULE[entry]["task"])


def _context(entry: str) -> dict[str, Any]:
    return {"id": "c0ffee", "name": _task(entry), "args": "()", "kwargs": "{}", "eta": None}


def _log_a_run(entry: str) -> None:
    """What beat, the worker and its pool write for one run of ``entry``'s task (Celery's
    own loggers and formats)."""
    BEAT.info("Scheduler: Sending due task %s (%s)", entry, _task(entry))
    strategy.logger.info(trace.LOG_RECEIVED, _context(entry))
    trace.info(trace.LOG_SUCCESS, {**_context(entry), "runtime": 0.01, "return_value": 0})


def _celery_records(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name.startswith("celery")]


def test_it_leaves_out_each_run_of_a_frequent_task_at_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)

    _log_a_run(SYNC)

    assert _celery_records(caplog) == []


def test_it_writes_each_run_of_a_frequent_task_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    _log_a_run(SYNC)

    assert [level for level, _ in _celery_records(caplog)] == ["DEBUG"] * 3
    assert f"Sending due task {SYNC}" in _celery_records(caplog)[0][1]


def test_it_keeps_the_hourly_tasks_runs_and_a_frequent_tasks_failure_at_their_level(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)

    _log_a_run(PRUNE)
    trace.logger.error(trace.LOG_FAILURE, {**_context(SYNC), "description": "raised", "exc": "x"})

    assert [level for level, _ in _celery_records(caplog)] == ["INFO"] * 3 + ["ERROR"]
