"""``manage.py check --deploy`` warns about HSTS, SSL redirect and insecure cookies by
default (development over plain HTTP), and not once the HTTPS switches are set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SWITCHED = ("W004", "W008", "W012", "W016")


def check_deploy(tmp_path: Path, **extra: str) -> str:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "DJANGO_SETTINGS_MODULE": "lockstep.dashboard.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "a-long-random-production-key-" + "x" * 40,
        **extra,
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout + done.stderr


def test_the_https_switches_silence_the_deploy_warnings(tmp_path: Path) -> None:
    plain = check_deploy(tmp_path)
    assert all(f"security.{w}" in plain for w in SWITCHED), plain
    secure = check_deploy(
        tmp_path,
        DJANGO_SECURE_HSTS_SECONDS="31536000",
        DJANGO_SECURE_SSL_REDIRECT="true",
        DJANGO_SECURE_COOKIES="true",
        DJANGO_BEHIND_PROXY="true",
    )
    assert not any(f"security.{w}" in secure for w in SWITCHED), secure
