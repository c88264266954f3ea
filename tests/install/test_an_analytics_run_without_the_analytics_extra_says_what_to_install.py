"""`lockstep[dashboard]` without `[analytics]`: the dashboard runs (it writes the data set
with pyarrow), and an analytics run fails, recorded as failed, saying which extra to
install, with no traceback (docs/packaging.md §3)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.install.conftest import InstallVenv

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_an_analytics_run_names_the_missing_extra(
    install_venv: InstallVenv, tmp_path: Path
) -> None:
    venv = install_venv(extras=("dashboard",))
    env = venv.env(LOCKSTEP_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path))

    def lockstep(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(venv.bin("lockstep")), *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
        )

    assert lockstep("migrate").returncode == 0
    done = lockstep("manage", "run_analytics", "--date", "2026-11-24")

    assert done.returncode == 1
    assert "Failed: AnalyticsNotInstalled: the Spark job needs the [analytics] extra" in done.stdout
    assert "pip install 'lockstep[dashboard,analytics]'" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    listed = lockstep("manage", "shell", "--no-imports", "-c", _PRINT_RUNS)
    assert listed.stdout.splitlines()[-1] == "failed"


_PRINT_RUNS = (
    "from lockstep.dashboard.reports.models import AnalyticsRun; "
    "print(*AnalyticsRun.objects.values_list('status', flat=True))"
)
