"""``LOCKSTEP_ENV=production`` refuses to start with the built-in development key, with no
key, with a weak key or with debug on; other values of the switch are refused too."""

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


def start(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """``manage.py check`` in a fresh process: settings are read once per process."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "LOCKSTEP_ENV", "LOCKSTEP_REQUIRE"))
    }
    env.update(
        PYTHONPATH=str(REPO),
        DJANGO_SETTINGS_MODULE="lockstep.dashboard.settings",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        **extra,
    )
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_it_refuses_to_start_without_a_secret_key(tmp_path: Path) -> None:
    done = start(tmp_path, LOCKSTEP_ENV="production")
    assert done.returncode != 0
    assert "DJANGO_SECRET_KEY must be set with LOCKSTEP_ENV=production" in done.stderr


def test_it_refuses_the_development_key_given_explicitly(tmp_path: Path) -> None:
    done = start(
        tmp_path,
        LOCKSTEP_ENV="production",
        DJANGO_SECRET_KEY="lockstep-insecure-development-key-change-me",
    )
    assert done.returncode != 0
    assert "must not be the built-in development key" in done.stderr


def test_it_refuses_a_key_django_calls_weak(tmp_path: Path) -> None:
    done = start(tmp_path, LOCKSTEP_ENV="production", DJANGO_SECRET_KEY="short-secret")
    assert done.returncode != 0
    assert "too weak for LOCKSTEP_ENV=production" in done.stderr


def test_it_refuses_debug(tmp_path: Path) -> None:
    done = start(
        tmp_path, LOCKSTEP_ENV="production", DJANGO_SECRET_KEY=STRONG_KEY, DJANGO_DEBUG="true"
    )
    assert done.returncode != 0
    assert "DJANGO_DEBUG=true is refused with LOCKSTEP_ENV=production" in done.stderr


def test_it_refuses_an_unknown_environment_name(tmp_path: Path) -> None:
    done = start(tmp_path, LOCKSTEP_ENV="staging")
    assert done.returncode != 0
    assert "LOCKSTEP_ENV must be one of development, production, got 'staging'" in done.stderr


def test_it_starts_with_a_strong_key_from_the_environment(tmp_path: Path) -> None:
    done = start(tmp_path, LOCKSTEP_ENV="production", DJANGO_SECRET_KEY=STRONG_KEY)
    assert done.returncode == 0, done.stderr
    assert "System check identified no issues" in done.stdout


def test_it_keeps_the_development_key_in_development(tmp_path: Path) -> None:
    done = start(tmp_path)
    assert done.returncode == 0, done.stderr
