"""`pip install lockstep` is the runtime alone: the Redis client and one import namespace,
with the Lua scripts shipped as package data (docs/packaging.md).

Everything runs in a fresh virtual environment with the wheel installed without extras,
outside the checkout and with ``PYTHONPATH`` cleared, so nothing of the repository can
stand in for what the wheel failed to ship."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import tomllib
from collections.abc import Iterator
from math import ceil
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest
import redis
from packaging.requirements import Requirement

from lockstep.workers import Producer, create_topic
from tests.support import redis_server

pytestmark = pytest.mark.slow

if TYPE_CHECKING:
    from tests.install.conftest import InstallVenv, Venv

ROOT = Path(__file__).resolve().parents[2]
# The folders lockstep/ links to (docs/packaging.md §1).
LINKED = ("workers", "dashboard", "analytics", "templates")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
DIST_INFO = f"lockstep-{PYPROJECT['project']['version']}.dist-info"

# What the runtime may bring: the Redis client (with its C parser) and what a fresh
# Python 3.11 venv holds before anything is installed.
RUNTIME = {"lockstep", "redis", "hiredis", "async-timeout", "pip", "setuptools"}
# Named by the issue whatever pyproject.toml says; the extras' and the dev group's own
# requirements are added from pyproject.toml below.
NEVER_IN_THE_RUNTIME = {
    "django",
    "pyspark",
    "pyarrow",
    "numpy",
    "daphne",
    "channels",
    "channels-redis",
    "psycopg",
    "psycopg-binary",
    "apprise",
    "honcho",
    "celery",
    "kombu",
    "pytest",
    "ruff",
    "mypy",
    "playwright",
    "hypothesis",
    "pip-audit",
    "django-stubs",
}
REPOSITORY_ONLY = ("workers", "dashboard", "analytics", "bench", "templates", "tests", "deploy")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _optional_and_dev_requirements() -> set[str]:
    """Every distribution an extra or the dev group of pyproject.toml names."""
    extras = PYPROJECT["project"]["optional-dependencies"].values()
    listed = [req for reqs in extras for req in reqs]
    listed += [req for req in PYPROJECT["dependency-groups"]["dev"] if isinstance(req, str)]
    return {_normalise(Requirement(req).name) for req in listed}


def _run_json(venv: Venv, *args: str) -> Any:
    """``python ARGS`` in the venv; the last line of its output, read as JSON."""
    result = venv.run(*args, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runtime_venv(install_venv: InstallVenv) -> Venv:
    return install_venv()


@pytest.fixture(scope="module")
def private_redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


DISTRIBUTIONS = """
import importlib.metadata, json
print(json.dumps(sorted({d.metadata["Name"] for d in importlib.metadata.distributions()})))
"""


def test_it_installs_only_the_redis_client_beside_lockstep(runtime_venv: Venv) -> None:
    installed = {_normalise(name) for name in _run_json(runtime_venv, "-c", DISTRIBUTIONS)}

    assert "lockstep" in installed
    assert "redis" in installed
    forbidden = (NEVER_IN_THE_RUNTIME | _optional_and_dev_requirements()) - RUNTIME
    assert installed & forbidden == set()
    assert installed - RUNTIME == set(), "the runtime is the Redis client alone"


TOP_LEVEL = """
import importlib.metadata, json
dist = importlib.metadata.distribution("lockstep")
print(json.dumps({
    "files": [str(f) for f in dist.files],
    "top_level": (dist.read_text("top_level.txt") or "").split(),
}))
"""


def test_it_puts_nothing_but_lockstep_at_the_top_level(runtime_venv: Venv) -> None:
    found = _run_json(runtime_venv, "-c", TOP_LEVEL)

    # Paths in RECORD are relative to site-packages; the console script lies outside it.
    inside = [name for name in found["files"] if not name.startswith("../")]
    top = {name.split("/")[0] for name in inside}
    assert top == {"lockstep", DIST_INFO}
    assert found["top_level"] == ["lockstep"]
    assert {n for n in found["files"] if n.startswith("../")} == {"../../../bin/lockstep"}
    # The runtime's scripts and the pages' templates are package data.
    assert "lockstep/workers/lua/create_topic.lua" in inside
    assert "lockstep/workers/lua/_fence.lua" in inside
    assert any(n.startswith("lockstep/templates/") and n.endswith(".html") for n in inside)
    site_packages = runtime_venv.site_packages()
    ours = sorted(p.name for p in site_packages.iterdir() if p.name.startswith("lockstep"))
    assert ours == ["lockstep", DIST_INFO]
    assert not (site_packages / "lockstep" / "workers").is_symlink()


def _checkout_files_under_the_namespace() -> set[str]:
    """Every file of the checkout that the namespace links to, as ``lockstep/...`` paths,
    ``__pycache__`` aside."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", *LINKED],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return {f"lockstep/{name}" for name in listed if "__pycache__" not in name}


def test_it_ships_every_file_of_the_linked_folders(runtime_venv: Venv) -> None:
    found = _run_json(runtime_venv, "-c", TOP_LEVEL)
    shipped = {name for name in found["files"] if name.startswith("lockstep/")}
    shipped = {name for name in shipped if "__pycache__" not in name}

    assert _checkout_files_under_the_namespace() - shipped == set()


FIND_SPECS = """
import importlib.util, json, sys
print(json.dumps({n: importlib.util.find_spec(n) is not None for n in sys.argv[1:]}))
"""


def test_it_leaves_the_repository_folders_unimportable(runtime_venv: Venv) -> None:
    importable = _run_json(runtime_venv, "-c", FIND_SPECS, *REPOSITORY_ONLY)

    assert importable == dict.fromkeys(REPOSITORY_ONLY, False)


HANDLER = """
import os

import redis

_client = redis.Redis.from_url(os.environ["RECORDER_REDIS_URL"])


def handle(messages, ctx):
    from lockstep import ConsumeStatus

    for m in messages:
        _client.rpush("recorded", f"{m.key}|{m.queue}|{m.offset}|{m.body.decode()}")
    return ConsumeStatus.SUCCESS
"""

PRODUCE_AND_CONSUME = """
import json, os, sys, time

import redis

url = sys.argv[1]
os.environ["RECORDER_REDIS_URL"] = url

import lockstep
from lockstep import Consumer, ConsumeStatus, Producer, Subscription, create_topic
from lockstep.workers.inspect import overview

imported_by_the_api = sorted(sys.modules)
client = redis.Redis.from_url(url)
create_topic(client, "orders", 4)
producer = Producer(url)
sent = []
for step in range(5):
    for order in range(8):
        key, body = f"order-{order}", f"step-{step}"
        result = producer.send("orders", key=key, body=body.encode())
        sent.append([key, result.queue, result.offset, body])

consumer = Consumer(url, [Subscription("orders", "mailer", handler="recorder.handle")])
consumer.start()
# Each handled message wakes a blocking move (in handling order), up to 30 s in all.
deadline = time.monotonic() + 30
for _ in sent:
    left = deadline - time.monotonic()
    if left <= 0 or client.blmove("recorded", "seen", left, "LEFT", "RIGHT") is None:
        break
consumer.stop()
recorded = [r.decode().split("|") for r in client.lrange("seen", 0, -1)]
print(json.dumps({
    "lockstep_file": lockstep.__file__,
    "imported_by_the_api": imported_by_the_api,
    "imported_after_consuming": sorted(sys.modules),
    "consumer_errors": consumer.errors,
    "sent": sent,
    "recorded": [[k, int(q), int(o), b] for k, q, o, b in recorded],
    "queues": [
        [q["max_offset"], g["committed_offset"], g["lag"]]
        for t in overview(client)["topics"] for q in t["queues"] for g in q["groups"]
    ],
}))
"""


@pytest.fixture(scope="module")
def consumed(
    runtime_venv: Venv, private_redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    """Run by the venv's python: create a topic, send 40 messages over 8 keys, consume
    them with ``lockstep.Consumer`` and a handler module beside the script."""
    scripts = tmp_path_factory.mktemp("runtime-script")
    (scripts / "recorder.py").write_text(HANDLER)
    (scripts / "produce_and_consume.py").write_text(PRODUCE_AND_CONSUME)
    return _run_json(runtime_venv, str(scripts / "produce_and_consume.py"), private_redis_url)


def test_it_runs_the_installed_copy_not_the_checkout(runtime_venv: Venv, consumed: Any) -> None:
    assert Path(consumed["lockstep_file"]).is_relative_to(runtime_venv.site_packages())


def test_it_consumes_what_it_sent_in_key_order_with_the_shipped_lua_scripts(
    consumed: Any,
) -> None:
    assert consumed["consumer_errors"] == []
    sent_per_key: dict[str, list[list[Any]]] = {}
    for key, queue, offset, body in consumed["sent"]:
        sent_per_key.setdefault(key, []).append([queue, offset, body])
    recorded_per_key: dict[str, list[list[Any]]] = {}
    for key, queue, offset, body in consumed["recorded"]:
        recorded_per_key.setdefault(key, []).append([queue, offset, body])

    assert len(consumed["sent"]) == 40
    assert recorded_per_key == sent_per_key
    # Every queue's offset was committed up to the last message: nothing is behind.
    assert len(consumed["queues"]) == 4
    assert all(max_offset == committed for max_offset, committed, _ in consumed["queues"])
    assert sum(max_offset for max_offset, _, _ in consumed["queues"]) == 40
    assert [lag for _, _, lag in consumed["queues"]] == [0, 0, 0, 0]


def test_it_never_imports_django_nor_the_other_parts(consumed: Any) -> None:
    for imported in (consumed["imported_by_the_api"], consumed["imported_after_consuming"]):
        top_level = {name.split(".")[0] for name in imported}
        assert top_level.isdisjoint({"django", "celery", "kombu", "pyspark", "pyarrow"})
        assert "lockstep.workers" in imported
        assert not any(
            name.startswith(("lockstep.dashboard", "lockstep.analytics", "lockstep.celery"))
            for name in imported
        )


def test_its_consume_command_consumes_in_key_order_and_stops_on_sigterm(
    runtime_venv: Venv, private_redis_url: str, tmp_path: Path
) -> None:
    (tmp_path / "recorder.py").write_text(HANDLER)  # the API test's, on database 1
    recorder = redis.Redis.from_url(private_redis_url.rsplit("/", 1)[0] + "/1")
    client = redis.Redis.from_url(private_redis_url)
    create_topic(client, "invoices", 2)
    producer = Producer(private_redis_url)
    sent = [(f"invoice-{n}", f"step-{step}") for step in range(3) for n in range(6)]
    for key, body in sent:
        producer.send("invoices", key=key, body=body.encode())
    producer.close()
    env = runtime_venv.env(
        REDIS_URL=private_redis_url,
        RECORDER_REDIS_URL=private_redis_url.rsplit("/", 1)[0] + "/1",
        PYTHONPATH=str(tmp_path),
        LOCKSTEP_POLL_BLOCK="0.2",
    )
    command = [str(runtime_venv.bin("lockstep")), "consume", "--topic", "invoices"]
    command += ["--group", "billing", "--handler", "recorder.handle"]
    consumer = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        # Each handled message wakes a blocking move, up to 60 s in all.
        deadline = time.monotonic() + 60
        for _ in sent:
            left = deadline - time.monotonic()
            if (
                left <= 0
                or recorder.blmove("recorded", "seen", ceil(left), "LEFT", "RIGHT") is None
            ):
                break
        consumer.send_signal(signal.SIGTERM)
        out, err = consumer.communicate(timeout=60)
    finally:
        consumer.kill()

    assert consumer.returncode == 0, err
    handled = cast("list[bytes]", recorder.lrange("seen", 0, -1))
    recorded = [(key, body) for key, _, _, body in (r.decode().split("|") for r in handled)]
    assert sorted(recorded) == sorted(sent)
    for key in {key for key, _ in sent}:
        assert [b for k, b in recorded if k == key] == [b for k, b in sent if k == key]
    lines = out.splitlines()
    assert lines[0].endswith(" consuming invoices as billing") and lines[-1] == "stopped"
    assert "Traceback" not in err
