"""deploy/'s Procfile and systemd units run only `lockstep` commands and options that the
installed wheel has (bin/check-deploy against the `lockstep` of a [dashboard] install;
`make test` runs the same check against the checkout)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.install.conftest import InstallVenv

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
ROOT = Path(__file__).resolve().parents[2]


def test_every_deployed_command_is_one_the_installed_lockstep_answers(
    install_venv: InstallVenv,
) -> None:
    venv = install_venv(extras=("dashboard",))

    done = subprocess.run(
        [sys.executable, str(ROOT / "bin" / "check-deploy"), str(venv.path / "bin")],
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    assert "consistent and valid" in done.stdout
