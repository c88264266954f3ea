"""`pip install lockstep` (the runtime alone) brings the `lockstep` command: its help
works, and a subcommand that needs the dashboard says which extra to install, in one
line, without a traceback (and writes nothing)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.install.conftest import InstallVenv

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_its_help_works_with_the_runtime_alone(install_venv: InstallVenv) -> None:
    venv = install_venv()

    for command in (
        [str(venv.bin("lockstep")), "--help"],
        [str(venv.python), "-m", "lockstep", "--help"],
    ):
        done = subprocess.run(
            command, capture_output=True, text=True, env=venv.env(), cwd=venv.path
        )
        assert done.returncode == 0, done.stderr
        assert "dashboard" in done.stdout and "manage" in done.stdout


@pytest.mark.parametrize(
    "args", [["dashboard"], ["manage", "createsuperuser"], ["worker"], ["web", "--port", "8001"]]
)
def test_a_dashboard_command_says_to_install_the_extra(
    install_venv: InstallVenv, tmp_path: Path, args: list[str]
) -> None:
    venv = install_venv()
    env = venv.env(LOCKSTEP_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path))

    done = subprocess.run(
        [str(venv.bin("lockstep")), *args], capture_output=True, text=True, env=env, cwd=tmp_path
    )

    assert done.returncode == 1
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"lockstep {args[0]}: needs the dashboard's packages (missing: django")
    assert line.endswith("Install them with: pip install 'lockstep[dashboard]'")
    assert list(tmp_path.iterdir()) == []
