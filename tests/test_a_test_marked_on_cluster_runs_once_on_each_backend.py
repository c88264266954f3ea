"""A test marked ``on_cluster`` (tests/conftest.py), on its function or through its
module's ``pytestmark``, is collected once per backend: ``[standalone]``, which earns no
marker, and ``[cluster]``, which earns ``cluster`` and ``slow``; ``on_cluster(only=True)``
gives the cluster case alone, and an unmarked test is collected once. In the cluster case
``redis_url`` and ``REDIS_URL`` name the cluster, Celery's broker and the channel layer the
standalone server, until the test ends.

The suite's own hooks and ``redis_url`` run in a pytester project whose servers are
stand-ins: what is proved is the mechanism, not Redis (the cluster set proves that)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
# No Redis: the cluster case gets the stand-in's URL, the standalone case this one.
CONFTEST = """
import pytest

from tests.conftest import pytest_collection_modifyitems, pytest_generate_tests, redis_url

STANDALONE = "redis://127.0.0.1:1/0"
CLUSTER = "redis+cluster://127.0.0.1:2/0"


class StandInCluster:
    url = CLUSTER

    def wait_healthy(self):
        pass


@pytest.fixture(scope="session")
def standalone_redis_url():
    return STANDALONE


@pytest.fixture(scope="session")
def local_redis_cluster():
    return StandInCluster()
"""
MARKED = """
import os

import pytest

STANDALONE = "redis://127.0.0.1:1/0"
CLUSTER = "redis+cluster://127.0.0.1:2/0"


@pytest.mark.on_cluster
def test_sees_its_backend(request, redis_url):
    if request.node.callspec.params["redis_url"] == "cluster":
        assert redis_url == CLUSTER
        assert os.environ["REDIS_URL"] == CLUSTER
        assert os.environ["CELERY_BROKER_URL"] == STANDALONE
        assert os.environ["CHANNELS_REDIS_URL"] == STANDALONE
    else:
        assert redis_url == STANDALONE
        assert os.environ["REDIS_URL"] == "before"


@pytest.mark.on_cluster
@pytest.mark.parametrize("n", [1, 2])
def test_with_its_own_parameters(redis_url, n):
    pass


def test_unmarked(redis_url):
    assert redis_url == STANDALONE
    assert os.environ["REDIS_URL"] == "before"
    assert "CELERY_BROKER_URL" not in os.environ
"""
MODULE_MARKED = """
import pytest

pytestmark = pytest.mark.on_cluster


def test_one(redis_url):
    pass


def test_two(redis_url):
    pass
"""
CLUSTER_ONLY = """
import pytest

pytestmark = pytest.mark.on_cluster(only=True)


def test_on_the_cluster_alone(redis_url):
    assert redis_url.startswith("redis+cluster://")
"""
# The inner session runs in this process: the Django plugin would set up a second test
# environment over the one this session holds; the project has no async tests.
INNER = (
    "--strict-markers",
    *("-p", "no:django"),
    *("-p", "no:asyncio"),
    *("-p", "no:cacheprovider"),
    *("-p", "no:xdist"),
)


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project with the suite's markers (from pyproject.toml), its hooks and
    ``redis_url``, and three test modules; ``REDIS_URL`` is ``before`` and no broker or
    channel-layer URL is set."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    markers = pyproject["tool"]["pytest"]["ini_options"]["markers"]
    pytester.makeini("[pytest]\nmarkers =\n" + "".join(f"    {m}\n" for m in markers))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_marked=MARKED, test_module_marked=MODULE_MARKED, test_cluster_only=CLUSTER_ONLY
    )
    monkeypatch.setenv("REDIS_URL", "before")
    for name in ("CELERY_BROKER_URL", "CHANNELS_REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    return pytester


def test_a_marked_test_is_collected_once_per_backend_and_its_cluster_case_is_cluster_and_slow(
    project: pytest.Pytester,
) -> None:
    items, _ = project.inline_genitems(*INNER)
    earned = {
        item.nodeid: {m for m in ("cluster", "slow") if item.get_closest_marker(m)}
        for item in items
    }
    assert earned == {
        "test_marked.py::test_sees_its_backend[standalone]": set(),
        "test_marked.py::test_sees_its_backend[cluster]": {"cluster", "slow"},
        "test_marked.py::test_with_its_own_parameters[standalone-1]": set(),
        "test_marked.py::test_with_its_own_parameters[standalone-2]": set(),
        "test_marked.py::test_with_its_own_parameters[cluster-1]": {"cluster", "slow"},
        "test_marked.py::test_with_its_own_parameters[cluster-2]": {"cluster", "slow"},
        "test_marked.py::test_unmarked": set(),
        "test_module_marked.py::test_one[standalone]": set(),
        "test_module_marked.py::test_one[cluster]": {"cluster", "slow"},
        "test_module_marked.py::test_two[standalone]": set(),
        "test_module_marked.py::test_two[cluster]": {"cluster", "slow"},
        "test_cluster_only.py::test_on_the_cluster_alone[cluster]": {"cluster", "slow"},
    }


def test_the_cluster_case_sees_the_cluster_and_leaves_the_environment_as_it_found_it(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest(*INNER)
    result.assert_outcomes(passed=12)
    assert os.environ["REDIS_URL"] == "before"
    assert "CELERY_BROKER_URL" not in os.environ
    assert "CHANNELS_REDIS_URL" not in os.environ


def test_on_cluster_refuses_an_argument_it_does_not_know(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_misspelt="import pytest\n\n@pytest.mark.on_cluster(onyl=True)\ndef test_x(): pass\n"
    )
    result = project.runpytest(*INNER, "test_misspelt.py")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*on_cluster takes only `only=True`*"])
