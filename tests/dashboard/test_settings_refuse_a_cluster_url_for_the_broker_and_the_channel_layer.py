"""With Lockstep's data on a Redis Cluster, Celery's broker and the channel layer cannot
default to ``REDIS_URL`` (neither Celery's Redis transport nor channels-redis speaks the
cluster protocol): settings refuse to load until ``CELERY_BROKER_URL`` and
``CHANNELS_REDIS_URL`` name a standalone Redis, and say which variables are missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Each test loads the settings in a fresh interpreter (seconds of Django start-up).
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CLUSTER = "redis+cluster://:cluster-secret@127.0.0.1:7000"
BROKER = "redis://127.0.0.1:6390/1"
CHANNELS = "redis://127.0.0.1:6390/2"
SIDE_VARIABLES = ("REDIS_URL", "CELERY_BROKER_URL", "CHANNELS_REDIS_URL", "LOCKSTEP_REDIS_CLUSTER")
SHOW = (
    "from django.conf import settings; "
    "print(settings.CELERY_BROKER_URL); "
    "print(settings.CHANNEL_LAYERS['default']['CONFIG']['hosts'][0]['address'])"
)


def load(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """Settings loaded in a fresh process (they are read once per process), with only
    ``extra`` of the Redis variables set; nothing connects to Redis."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in SIDE_VARIABLES and not k.startswith(("DJANGO_", "LOCKSTEP_ENV"))
    }
    env.update(
        PYTHONPATH=str(REPO),
        DJANGO_SETTINGS_MODULE="lockstep.dashboard.settings",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        **extra,
    )
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {SHOW}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_standalone_redis_url_stays_the_default_of_both(tmp_path: Path) -> None:
    done = load(tmp_path, REDIS_URL="redis://127.0.0.1:6390/0")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["redis://127.0.0.1:6390/0", "redis://127.0.0.1:6390/0"]


def test_it_refuses_a_cluster_without_a_broker_and_a_channel_layer_and_names_both(
    tmp_path: Path,
) -> None:
    done = load(tmp_path, REDIS_URL=CLUSTER)
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr
    assert "REDIS_URL names a Redis Cluster" in done.stderr
    assert "set CELERY_BROKER_URL and CHANNELS_REDIS_URL to a standalone Redis" in done.stderr
    assert "cluster-secret" not in done.stderr


def test_it_names_the_one_variable_still_missing(tmp_path: Path) -> None:
    done = load(tmp_path, REDIS_URL=CLUSTER, CELERY_BROKER_URL=BROKER)
    assert done.returncode != 0
    assert "set CHANNELS_REDIS_URL to a standalone Redis" in done.stderr
    done = load(tmp_path, REDIS_URL=CLUSTER, CHANNELS_REDIS_URL=CHANNELS)
    assert done.returncode != 0
    assert "set CELERY_BROKER_URL to a standalone Redis" in done.stderr


def test_it_refuses_a_cluster_chosen_by_the_switch_too(tmp_path: Path) -> None:
    done = load(tmp_path, REDIS_URL="redis://127.0.0.1:7000/0", LOCKSTEP_REDIS_CLUSTER="1")
    assert done.returncode != 0
    assert "set CELERY_BROKER_URL and CHANNELS_REDIS_URL" in done.stderr


def test_it_refuses_the_cluster_itself_as_the_broker_or_the_channel_layer(
    tmp_path: Path,
) -> None:
    done = load(tmp_path, REDIS_URL=CLUSTER, CELERY_BROKER_URL=CLUSTER, CHANNELS_REDIS_URL=CHANNELS)
    assert done.returncode != 0
    assert "CELERY_BROKER_URL must name a standalone Redis, not a Redis Cluster" in done.stderr
    assert "cluster-secret" not in done.stderr
    switched = "redis://127.0.0.1:7000/0"
    done = load(
        tmp_path,
        REDIS_URL=switched,
        LOCKSTEP_REDIS_CLUSTER="1",
        CELERY_BROKER_URL=BROKER,
        CHANNELS_REDIS_URL=switched,
    )
    assert done.returncode != 0
    assert "CHANNELS_REDIS_URL must name a standalone Redis, not a Redis Cluster" in done.stderr


def test_it_loads_a_cluster_with_both_given_each_on_its_own(tmp_path: Path) -> None:
    done = load(tmp_path, REDIS_URL=CLUSTER, CELERY_BROKER_URL=BROKER, CHANNELS_REDIS_URL=CHANNELS)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [BROKER, CHANNELS]
