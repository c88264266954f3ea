"""The markers ``make test-quick`` relies on are earned from what a test uses
(tests/conftest.py): every test on a Redis Cluster is ``cluster``, every test driving
Chromium ``browser``, every test starting Spark ``spark``, and each of them ``slow``, so
the quick set holds none of them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYTEST = (sys.executable, "-m", "pytest")
# Four collections of the whole suite in fresh processes: seconds each.
pytestmark = pytest.mark.slow


def _collected(marker: str) -> set[str]:
    """The test ids ``-m marker`` selects, collected in a fresh process."""
    done = subprocess.run(
        [*PYTEST, "--collect-only", "-q", "-p", "no:cacheprovider", "-m", marker, "tests"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return {line for line in done.stdout.splitlines() if "::" in line}


def _modules(ids: set[str]) -> set[str]:
    return {test_id.split("::", 1)[0] for test_id in ids}


@pytest.fixture(scope="module")
def quick() -> set[str]:
    return _collected("not slow")


def test_the_quick_set_holds_no_cluster_browser_or_spark_module(quick: set[str]) -> None:
    modules = _modules(quick)
    assert not {m for m in modules if "/cluster/" in m}
    for path in ROOT.joinpath("tests").rglob("test_*.py"):
        if path == Path(__file__).resolve():
            continue
        source = path.read_text(encoding="utf-8")
        # The cluster fixture as a (typed) parameter: a pytester project may define a
        # stand-in of that name.
        uses_cluster = "local_redis_cluster: " in source
        if "playwright" in source or "pyspark" in source or uses_cluster:
            assert str(path.relative_to(ROOT)) not in modules, path


def _standalone_twin(test_id: str) -> str:
    """The id of the ``[standalone]`` case of a ``[cluster]`` case (the backend is one of
    the parameters: ``[cluster]``, ``[cluster-key-continue]``)."""
    name, _, params = test_id[:-1].rpartition("[")
    twin = ["standalone" if p == "cluster" else p for p in params.split("-")]
    return f"{name}[{'-'.join(twin)}]"


def test_the_cluster_case_of_a_test_on_either_redis_is_slow_and_the_standalone_one_quick(
    quick: set[str],
) -> None:
    """A test marked ``on_cluster`` or using ``redis_on_either`` outside the ``cluster``
    folders (which hold the cluster-only tests) has both cases: the cluster one is
    ``cluster``, the standalone one is not, and is quick unless its module says slow."""
    either = {
        t
        for t in _collected("cluster")
        if "/cluster/" not in t and "cluster" in t.rpartition("[")[2][:-1].split("-")
    }
    assert either, "some test runs on both servers (on_cluster, redis_on_either)"
    assert not either & quick
    twins = {_standalone_twin(t) for t in either}
    assert twins <= _collected("not cluster")
    slow_modules = {
        m for m in _modules(twins) if "pytest.mark.slow" in ROOT.joinpath(m).read_text("utf-8")
    }
    assert {t for t in twins if t.split("::", 1)[0] not in slow_modules} <= quick


def test_every_slow_marker_set_is_a_subset_of_slow() -> None:
    slow = _collected("slow")
    for marker in ("cluster", "browser", "spark"):
        selected = _collected(marker)
        assert selected, marker
        assert selected <= slow, marker
