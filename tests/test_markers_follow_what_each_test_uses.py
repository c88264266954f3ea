"""The markers ``make test-quick`` relies on are earned from what a test uses
(tests/conftest.py): every test on a Redis Cluster is ``cluster``, every test driving
Chromium ``browser``, every test starting Spark ``spark``, and each of them ``slow``, so
the quick set holds none of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# One collection of the whole suite in a fresh process (seconds), as ``-m`` sees it: each
# test's markers once every hook has added its own.
COLLECT = """
import json, sys
import pytest

class Markers:
    def pytest_collection_finish(self, session):
        found = {i.nodeid: sorted({m.name for m in i.iter_markers()}) for i in session.items}
        with open(sys.argv[1], "w") as out:
            json.dump(found, out)

sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "tests"], [Markers()]))
"""
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def markers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Every test id with its markers, collected in a fresh process."""
    out = tmp_path_factory.mktemp("collected") / "markers.json"
    done = subprocess.run(
        [sys.executable, "-c", COLLECT, str(out)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(out.read_text())
    assert found, done.stdout
    return {test_id: set(names) for test_id, names in found.items()}


def _marked(markers: dict[str, set[str]], name: str) -> set[str]:
    """The test ids ``-m name`` selects."""
    return {test_id for test_id, names in markers.items() if name in names}


def _modules(ids: set[str]) -> set[str]:
    return {test_id.split("::", 1)[0] for test_id in ids}


@pytest.fixture(scope="module")
def quick(markers: dict[str, set[str]]) -> set[str]:
    """The test ids ``-m "not slow"`` selects."""
    return set(markers) - _marked(markers, "slow")


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
    markers: dict[str, set[str]], quick: set[str]
) -> None:
    """A test marked ``on_cluster`` or using ``redis_on_either`` outside the ``cluster``
    folders (which hold the cluster-only tests) has both cases: the cluster one is
    ``cluster``, the standalone one is not, and is quick unless its module says slow."""
    either = {
        t
        for t in _marked(markers, "cluster")
        if "/cluster/" not in t and "cluster" in t.rpartition("[")[2][:-1].split("-")
    }
    assert either, "some test runs on both servers (on_cluster, redis_on_either)"
    assert not either & quick
    twins = {_standalone_twin(t) for t in either}
    assert twins <= set(markers) - _marked(markers, "cluster")
    slow_modules = {
        m for m in _modules(twins) if "pytest.mark.slow" in ROOT.joinpath(m).read_text("utf-8")
    }
    assert {t for t in twins if t.split("::", 1)[0] not in slow_modules} <= quick


def test_every_slow_marker_set_is_a_subset_of_slow(markers: dict[str, set[str]]) -> None:
    slow = _marked(markers, "slow")
    for marker in ("cluster", "browser", "spark"):
        selected = _marked(markers, marker)
        assert selected, marker
        assert selected <= slow, marker
