"""`make run` as a new user runs it, in a terminal: it starts the demo without an error
line, and Ctrl-C — once it runs, or while it is still starting — ends make with status 0
(no ``make: *** … Error 130``) and leaves no process behind: not the dashboard's, not the
first report's timer, not its Redis (bin/run, bin/foreground).

The terminal is a real pseudo-terminal whose controlling process is make, as under a
shell; Ctrl-C is the byte the terminal turns into SIGINT for its foreground group."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dashboard.make_run import DEMO_FAILURES, Terminal, make_run
from tests.support import probe_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    with make_run(tmp_path) as term:
        yield term


def _startup_errors(output: str) -> list[str]:
    return [
        line
        for line in output.splitlines()
        if ("ERROR" in line and not any(ok in line for ok in DEMO_FAILURES))
        or "does not exist" in line
        or "waits for it" in line
    ]


def test_it_starts_without_errors_and_ctrl_c_exits_0_leaving_nothing(terminal: Terminal) -> None:
    terminal.wait_for("demo producer:")
    assert probe_until(terminal.answers_http, bool, timeout=120, interval=0.5), terminal.output
    terminal.wait_for("lockstep@")  # the Celery worker with the demo's consumers is up
    assert not _startup_errors(terminal.output), "\n".join(_startup_errors(terminal.output))

    status = terminal.ctrl_c()

    assert status == 0, terminal.output[-4000:]
    assert "make: ***" not in terminal.output, terminal.output[-4000:]
    assert probe_until(terminal.left_behind, lambda left: not left, timeout=5) == []


def test_it_exits_0_leaving_nothing_after_a_ctrl_c_while_starting(terminal: Terminal) -> None:
    terminal.wait_for("Lockstep: applying database migrations")

    status = terminal.ctrl_c()

    assert status == 0, terminal.output[-4000:]
    assert "make: ***" not in terminal.output, terminal.output[-4000:]
    assert probe_until(terminal.left_behind, lambda left: not left, timeout=5) == []
