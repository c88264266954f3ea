"""How the suite spreads over pytest-xdist's workers: ``make test`` runs it with ``-n``
workers and ``--dist loadscope`` (docs/testing.md, "Parallel runs"), scheduled here.

- The unit of work is a test module: its module-scoped fixtures (a browser and a daphne,
  a private redis-server) start once, on one worker. The wheel's tests (``tests/install``)
  are one unit, as they share the wheel and its virtual environments; so are the
  analytics tests (``tests/analytics``), so that one worker at a time runs Spark.
- The fault-injection runs and the endpoint fuzzing (``SPREAD_MODULES``) are a unit per
  test: the first run for most of a minute each, the second for over a minute in all, and
  they share no module fixture, so one worker running a module's tests in a row would
  finish a minute or two after the others.
- The long units start first (``LONG_UNITS``: the wheel's, the analytics and the
  fault-injection tests), then the other slow tests, then the rest: a unit of minutes
  begun when everything else is done would leave the other workers idle, and the quick
  ones fill the gaps at the end. Units are handed out in that order.

(pytest-xdist's own ``xdist_group`` marker cannot do this: its worker side renames node
ids through an attribute pytest 9 no longer reads.)
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

# Folders that are one unit each: the wheel's tests share the wheel and its virtual
# environments; the analytics tests share the in-process Spark session, and the others
# there start Spark processes of their own. JVMs of 1-2 GB on two cores: four workers
# starting them at once (slow units go first) timed all of them out.
SHARED_FOLDERS = ("tests/install/", "tests/analytics/")
# Modules whose tests are a unit each: long, and with no module-scoped fixture.
SPREAD_MODULES = (
    "tests/workers/test_order_and_loss_under_failures.py",
    "tests/workers/test_key_order_under_failures.py",
    "tests/dashboard/test_every_endpoint_answers_bad_parameters_without_a_500.py",
)
# Units of minutes (the wheel, Spark) or of most of one each (fault injection). Sorting
# them with every other slow test put the wheel's unit behind the dashboard's browser
# modules, and the run ended with one worker building wheels.
LONG_UNITS = (
    *SHARED_FOLDERS,
    "tests/workers/test_order_and_loss_under_failures.py",
    "tests/workers/test_key_order_under_failures.py",
)


class ModuleScheduling(LoadScopeScheduling):
    """pytest-xdist's scope scheduling with a module, a shared folder or a spread module's
    test as the scope, and the scopes in collection order."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        # Collection order already puts the slow units first; sorting the units by their
        # number of tests (xdist's default) would start a hundred quick ones instead.
        config.option.loadscopereorder = False

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its module, its shared folder, or itself in a
    spread module."""
    path = nodeid.split("::", 1)[0]
    if path in SPREAD_MODULES:
        return nodeid
    for folder in SHARED_FOLDERS:
        if path.startswith(folder):
            return folder
    return path


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadScopeScheduling | None:
    """``--dist loadscope`` schedules by module (``ModuleScheduling``); any other mode is
    pytest-xdist's own."""
    if config.getvalue("dist") != "loadscope":
        return None
    return ModuleScheduling(config, log)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the long units first and the other slow tests next, once every other hook has
    ordered and marked them (a stable sort: each module keeps its order)."""
    items.sort(
        key=lambda item: start_rank(item.nodeid, item.get_closest_marker("slow") is not None)
    )


def start_rank(nodeid: str, slow: bool) -> int:
    """When a test's unit starts: 0 for the long units, 1 for other slow tests, 2 for the
    rest."""
    if nodeid.split("::", 1)[0].startswith(LONG_UNITS):
        return 0
    return 1 if slow else 2
