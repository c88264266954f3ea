"""``manage.py benchmark ordering-cluster --json`` runs the same ordering cases on a
private standalone Redis and a private local Redis Cluster in one run and prints one JSON
object with both and their ratio."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.workers.harness import REPO

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def test_it_compares_the_cluster_with_standalone_redis_in_one_json_object() -> None:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    command = ["manage.py", "benchmark", "ordering-cluster", "--json"]
    done = subprocess.run(
        [sys.executable, *command, "--messages", "1000", "--repeats", "1"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)

    assert result["noop_messages"] == 1000
    assert result["cluster_layout"] == {"masters": 3, "replicas_per_master": 1}
    for target in ("standalone", "cluster"):
        figures = result[target]
        assert figures["violations"] == 0
        assert figures["queue_mode_noop_msgs_per_s"] > 0
        assert figures["key_mode_io_msgs_per_s"] > 0
        assert len(figures["queue_mode_noop_runs"]) == 1
    ratio = result["cluster_to_standalone"]["queue_mode_noop"]
    expected = (
        result["cluster"]["queue_mode_noop_msgs_per_s"]
        / result["standalone"]["queue_mode_noop_msgs_per_s"]
    )
    assert abs(ratio - expected) < 0.01
