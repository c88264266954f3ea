"""Beside a running ``make run``, a second shell's commands act on the Redis it started:
bin/run leaves its settings in ``lockstep.env`` of its data directory (``python -m
lockstep.checkout write``, lockstep/checkout.py), and ``manage.py`` and the checkout's
``lockstep`` command read them before anything else, so the settings the shell would
otherwise use (here a ``.env`` naming another redis-server, standing for another system's
Redis on the default port 6379, which a test cannot own) do not decide. Each command says
which Redis (password masked) and database it uses; a ``REDIS_URL`` in the environment
still wins; after the run stopped the file still points at its Redis and says it stopped.

The checkout is laid out in a temporary folder (``manage.py`` copied, its ``var/`` beside
it), and every command runs as a real process from a clean environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from lockstep.checkout import checkout_root
from lockstep.dashboard.demo.handlers import FIXED_FLAG
from tests.support import redis_server

# Each case starts Django in fresh processes (seconds each).
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "Demo-Secret-4417"
# What `demo_poison status` answers on each Redis: only the demo's holds the fixed flag.
ON_THE_DEMOS = "demo billing handler: fixed"
ON_THE_OTHER = "demo billing handler: broken for every 100th order"


@dataclass(frozen=True)
class Checkout:
    root: Path
    demo_url: str
    other_url: str

    @property
    def var(self) -> Path:
        return self.root / "var"

    def env(self, **extra: str) -> dict[str, str]:
        """A clean environment: a new shell's, with nothing of Lockstep's in it."""
        home = self.root.parent / "home"
        home.mkdir(exist_ok=True)
        return {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(REPO), **extra}

    def run(self, *argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, *argv],
            cwd=self.root,
            env=self.env(**extra),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    def make_run_writes_its_settings(self) -> None:
        """What bin/run does once its Redis answers, with the environment it exports."""
        self.run(
            *("-m", "lockstep.checkout", "write"),
            REDIS_URL=self.demo_url,
            LOCKSTEP_DATA_DIR=str(self.var),
            DJANGO_SETTINGS_MODULE="lockstep.dashboard.settings",
        )

    def status(self, *command: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return self.run(*(command or ("manage.py",)), "demo_poison", "status", **extra)


@pytest.fixture(scope="module")
def demo_url() -> Iterator[str]:
    """The Redis `make run` started (with a password, to see it masked)."""
    with redis_server(password=PASSWORD) as url:
        client = redis.Redis.from_url(url)
        client.set(FIXED_FLAG, 1)
        client.close()
        yield url


@pytest.fixture(scope="module")
def other_url() -> Iterator[str]:
    """Another system's Redis, where the shell's own settings point."""
    with redis_server() as url:
        yield url


@pytest.fixture
def checkout(tmp_path: Path, demo_url: str, other_url: str) -> Checkout:
    root = tmp_path / "checkout"
    root.mkdir()
    shutil.copy2(REPO / "manage.py", root / "manage.py")
    (root / ".env").write_text(f"REDIS_URL={other_url}\n")
    return Checkout(root, demo_url, other_url)


def _masked(url: str) -> str:
    return url.replace(PASSWORD, "***")


def test_it_reads_the_redis_make_run_started_and_says_so(checkout: Checkout) -> None:
    checkout.make_run_writes_its_settings()

    done = checkout.status()

    assert done.stdout.strip() == ON_THE_DEMOS
    run_file = checkout.var / "lockstep.env"
    told = (
        f"Lockstep: Redis {_masked(checkout.demo_url)}, "
        f"database sqlite3 {checkout.var / 'db.sqlite3'} (from {run_file}: make run"
    )
    assert done.stderr.startswith(told), done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    assert run_file.stat().st_mode & 0o777 == 0o600


def test_the_lockstep_command_of_the_checkout_reads_it_too(checkout: Checkout) -> None:
    checkout.make_run_writes_its_settings()

    done = checkout.status("-m", "lockstep", "manage", LOCKSTEP_DATA_DIR=str(checkout.var))

    assert done.stdout.strip() == ON_THE_DEMOS
    assert done.stderr.startswith(f"Lockstep: Redis {_masked(checkout.demo_url)}, "), done.stderr


def test_a_redis_url_in_the_environment_still_wins(checkout: Checkout) -> None:
    checkout.make_run_writes_its_settings()

    done = checkout.status(REDIS_URL=checkout.other_url)

    assert done.stdout.strip() == ON_THE_OTHER
    assert done.stderr.startswith(f"Lockstep: Redis {checkout.other_url}, "), done.stderr


def test_after_make_run_stopped_it_still_names_that_redis_and_says_it_stopped(
    checkout: Checkout,
) -> None:
    checkout.make_run_writes_its_settings()
    checkout.run("-m", "lockstep.checkout", "stopped", LOCKSTEP_DATA_DIR=str(checkout.var))

    done = checkout.status()

    assert done.stdout.strip() == ON_THE_DEMOS
    first_line = done.stderr.splitlines()[0]
    assert first_line.startswith(f"Lockstep: Redis {_masked(checkout.demo_url)}, "), first_line
    assert "; stopped " in first_line


def test_only_a_source_checkout_counts_as_one(tmp_path: Path) -> None:
    installed = tmp_path / "site-packages" / "lockstep"
    (installed / "workers").mkdir(parents=True)
    (installed.parent / "manage.py").write_text("")  # even beside someone's manage.py

    assert checkout_root(REPO / "lockstep") == REPO
    assert checkout_root(installed) is None
