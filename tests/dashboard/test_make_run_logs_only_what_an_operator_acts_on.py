"""`make run` prints what an operator acts on (issue #41): no django-axes banner from every
process, no Celery warning about running as root in the demo (this test runs as root
where the suite runs in a container), no line for each run of the tasks beat sends every
few seconds, and each of the demo's deliberate handler failures on one line, without a
traceback (the demo raises ``HandlerFailure``; docs/api.md §10).

It waits on events, not on time: the two demo failures in the output, then the poison
order's dead letter in the database, which only the dead-letter sync beat sends every
2 s writes there: by then beat has sent that task, and the worker has run it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lockstep.dashboard.celery import ROOT_WARNING
from lockstep.dashboard.settings import CELERY_BEAT_SCHEDULE
from tests.dashboard.make_run import make_run
from tests.support import probe_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

# The task beat sends every 2 s.
SYNC = str(CELERY_BEAT_SCHEDULE["lockstep-sync-dead-letters"]["task"])
# The demo's two kinds of failure: the mailer's few percent, the billing's poison orders.
MAILER_FAILURE, BILLING_FAILURE = "demo: mail server timed out", "demo: card declined for"


def _dead_letters_stored(data_dir: Path) -> int:
    try:
        with sqlite3.connect(f"file:{data_dir / 'db.sqlite3'}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT COUNT(*) FROM deadletters_deadletter").fetchone()[0])
    except sqlite3.Error:  # not migrated yet, or busy for a moment
        return 0


def _run_until_a_dead_letter_is_synced(tmp_path: Path) -> str:
    with make_run(tmp_path) as terminal:
        terminal.wait_for(MAILER_FAILURE)
        terminal.wait_for(BILLING_FAILURE)
        synced = probe_until(lambda: _dead_letters_stored(terminal.data_dir), bool, 120, 0.5)
        assert synced, terminal.output[-4000:]
        return terminal.output


def test_it_prints_no_banner_no_root_warning_no_frequent_task_and_each_demo_failure_in_a_line(
    tmp_path: Path,
) -> None:
    output = _run_until_a_dead_letter_is_synced(tmp_path)
    lines = output.splitlines()

    assert "AXES: BEGIN" not in output
    assert ROOT_WARNING not in output
    # Beat's "Sending due task …" and the worker's "Task …[id] received / succeeded".
    assert [line for line in lines if "Sending due task" in line and SYNC in line] == []
    assert [line for line in lines if f"{SYNC}[" in line] == []
    failures = [
        i for i, line in enumerate(lines) if MAILER_FAILURE in line or BILLING_FAILURE in line
    ]
    assert failures
    followed_by_a_traceback = [
        lines[i] for i in failures if i + 1 < len(lines) and "Traceback" in lines[i + 1]
    ]
    assert followed_by_a_traceback == []
