"""``manage.py create_topic`` needs only Redis: on a database that was never migrated it
still creates the topic (and says the admin's copy was not updated)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from lockstep.workers.topics import get_topic

pytestmark = pytest.mark.on_cluster

REPO = Path(__file__).resolve().parents[2]


def test_it_creates_the_topic_without_a_migrated_database(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "DJANGO_SETTINGS_MODULE": "lockstep.dashboard.settings",
        "REDIS_URL": redis_url,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'never-migrated.sqlite3'}",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "create_topic", "invoices", "--queues", "4"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "topic invoices: 4 queues" in done.stdout
    assert "not updated" in done.stderr and "Traceback" not in done.stderr
    assert get_topic(redis_client, "invoices").queues == 4
