"""``lockstep`` (``python -m lockstep``) from the checkout: its help, ``lockstep manage``
handing everything to Django, and the settings it always uses (Lockstep's own, whatever
DJANGO_SETTINGS_MODULE the adopter's shell holds), refused without a traceback when
wrong."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dashboard.settings_probe import probe_env

pytestmark = pytest.mark.slow


def _lockstep(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "lockstep", *args],
        cwd=tmp_path,
        env=probe_env(home, LOCKSTEP_DATA_DIR=str(tmp_path / "data"), **env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_its_help_lists_every_role_consume_and_manage(tmp_path: Path) -> None:
    done = _lockstep(tmp_path, "--help")

    assert done.returncode == 0, done.stderr
    listed = re.findall(r"^    (\w+)", done.stdout, flags=re.MULTILINE)
    assert listed == [
        "dashboard",
        "web",
        "ingester",
        "alerts",
        "migrate",
        "worker",
        "analytics",
        "beat",
        "consume",
        "manage",
    ]


def test_manage_hands_every_argument_to_django_help_included(tmp_path: Path) -> None:
    listed = _lockstep(tmp_path, "manage", "help")
    helped = _lockstep(tmp_path, "manage", "grant_role", "--help")

    assert listed.returncode == 0, listed.stderr
    assert "createsuperuser" in listed.stdout and "grant_role" in listed.stdout
    assert helped.returncode == 0, helped.stderr
    assert "usage: lockstep manage grant_role" in helped.stdout


def test_it_uses_its_own_settings_whatever_the_shell_names(tmp_path: Path) -> None:
    done = _lockstep(tmp_path, "migrate", DJANGO_SETTINGS_MODULE="shop.settings")

    assert done.returncode == 0, done.stderr
    assert (tmp_path / "data" / "db.sqlite3").is_file()
    assert (tmp_path / "data").stat().st_mode & 0o777 == 0o700


def test_it_refuses_a_wrong_setting_in_one_line(tmp_path: Path) -> None:
    done = _lockstep(tmp_path, "dashboard", LOCKSTEP_CELERY_QUEUE="two words")

    assert done.returncode == 1
    assert done.stderr.startswith("lockstep dashboard: configuration error: LOCKSTEP_CELERY_QUEUE")
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "data").exists()
