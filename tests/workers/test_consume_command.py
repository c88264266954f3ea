"""`lockstep consume` (the runtime alone) and `manage.py consume` refuse to start on a
subscription they could never run, and say why in one line, without a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import redis

from lockstep.workers import create_topic
from tests.workers.harness import REPO, registered

# Each command, and how it starts the line that says what is wrong.
COMMANDS = {
    "lockstep": (["-m", "lockstep", "consume"], "lockstep consume: "),
    "manage.py": (["manage.py", "consume"], "CommandError: "),
}


def _consume(redis_url: str, command: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REDIS_URL": redis_url, "PYTHONPATH": str(REPO)}
    argv, _ = COMMANDS[command]
    return subprocess.run(
        [sys.executable, *argv, "--topic", "orders", "--group", "billing", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_it_exits_non_zero_when_the_handler_does_not_import(
    redis_client: redis.Redis, redis_url: str, command: str
) -> None:
    create_topic(redis_client, "orders", 4)

    result = _consume(
        redis_url, command, "--handler", "billing.handlers_that_do_not_exist.on_order"
    )

    assert result.returncode == 1
    _, prefix = COMMANDS[command]
    assert (
        f"{prefix}handler 'billing.handlers_that_do_not_exist.on_order': cannot "
        "import 'billing.handlers_that_do_not_exist': No module named 'billing'"
    ) in result.stderr.splitlines()
    assert "Traceback" not in result.stderr
    assert registered(redis_client, "billing", "orders") == set()


@pytest.mark.parametrize("command", COMMANDS)
def test_it_exits_non_zero_when_the_handler_is_not_in_its_module(
    redis_url: str, command: str
) -> None:
    result = _consume(redis_url, command, "--handler", "tests.workers.handlers.no_such_handler")

    assert result.returncode == 1
    assert (
        "handler 'tests.workers.handlers.no_such_handler': module "
        "'tests.workers.handlers' has no 'no_such_handler'"
    ) in result.stderr
    assert "Traceback" not in result.stderr
