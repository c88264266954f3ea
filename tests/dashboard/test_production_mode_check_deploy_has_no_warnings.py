"""With ``LOCKSTEP_ENV=production`` and a strong key, ``manage.py check --deploy`` reports
nothing at all: HSTS, SSL redirect and secure cookies are on by default, the key passes
W009; each DJANGO_SECURE_* variable still overrides its default."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Each test loads the settings in a fresh interpreter (seconds of Django start-up).
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
STRONG_KEY = "kq3Zr9-TmW1xV7yB2nP5sL8dF4hJ6gC0aE-uR2tY9iO3pA7sD1fG5hJ8kL0zX4cV"


def check_deploy(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "LOCKSTEP_"))}
    env.update(
        PYTHONPATH=str(REPO),
        DJANGO_SETTINGS_MODULE="lockstep.dashboard.settings",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        LOCKSTEP_ENV="production",
        DJANGO_SECRET_KEY=STRONG_KEY,
        **extra,
    )
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_it_reports_no_issue_in_production_mode(tmp_path: Path) -> None:
    done = check_deploy(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout
    assert "WARNINGS" not in done.stdout + done.stderr


def test_it_still_lets_an_https_switch_be_turned_off(tmp_path: Path) -> None:
    done = check_deploy(tmp_path, DJANGO_SECURE_SSL_REDIRECT="false")
    assert done.returncode != 0
    assert "security.W008" in done.stdout + done.stderr
