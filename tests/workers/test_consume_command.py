"""`manage.py consume` refuses to start on a subscription it could never run, and says why."""

from __future__ import annotations

import os
import subprocess
import sys

import redis

from lockstep.workers import create_topic
from tests.workers.harness import REPO, registered


def _consume(redis_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REDIS_URL": redis_url, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "manage.py", "consume", "--topic", "orders", "--group", "billing", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_it_exits_non_zero_when_the_handler_does_not_import(
    redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 4)

    result = _consume(redis_url, "--handler", "billing.handlers_that_do_not_exist.on_order")

    assert result.returncode != 0
    assert (
        "CommandError: handler 'billing.handlers_that_do_not_exist.on_order': cannot "
        "import 'billing.handlers_that_do_not_exist': No module named 'billing'"
    ) in result.stderr
    assert "Traceback" not in result.stderr
    assert registered(redis_client, "billing", "orders") == set()


def test_it_exits_non_zero_when_the_handler_is_not_in_its_module(
    redis_client: redis.Redis, redis_url: str
) -> None:
    result = _consume(redis_url, "--handler", "tests.workers.handlers.no_such_handler")

    assert result.returncode != 0
    assert (
        "handler 'tests.workers.handlers.no_such_handler': module "
        "'tests.workers.handlers' has no 'no_such_handler'"
    ) in result.stderr
