"""``make test`` hands pytest-xdist's workers whole modules (tests/scheduling.py): a
module's tests share its module fixtures on one worker; the wheel's and the analytics
tests are one unit each; a spread module's tests are a unit each."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.scheduling import LONG_UNITS, SHARED_FOLDERS, SPREAD_MODULES, start_rank, unit_of

ROOT = Path(__file__).resolve().parents[1]


def test_the_tests_of_one_module_are_one_unit() -> None:
    module = "tests/dashboard/test_api_queue.py"
    assert unit_of(f"{module}::test_a") == unit_of(f"{module}::test_b[cluster]") == module
    assert unit_of("tests/dashboard/test_api_events.py::test_a") != module


def test_a_shared_folder_is_one_unit_whatever_the_module() -> None:
    for folder in SHARED_FOLDERS:
        units = {unit_of(f"{folder}test_{name}.py::test_it") for name in ("one", "two")}
        assert units == {folder}


def test_each_test_of_a_spread_module_is_a_unit_of_its_own() -> None:
    for module in SPREAD_MODULES:
        first, second = f"{module}::test_it[a]", f"{module}::test_it[b]"
        assert unit_of(first) == first
        assert unit_of(second) == second


def test_a_spread_module_exists_and_defines_no_fixture_its_tests_could_share() -> None:
    for module in SPREAD_MODULES:
        tree = ast.parse(ROOT.joinpath(module).read_text(encoding="utf-8"))
        decorators = [
            ast.unparse(d)
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef)
            for d in node.decorator_list
        ]
        # A fixture of the function's scope is made for each test wherever it runs.
        shared = [d for d in decorators if "fixture" in d and "scope=" in d]
        assert not [d for d in shared if "scope='function'" not in d], module


def test_the_long_units_start_before_the_other_slow_tests_and_those_before_the_rest() -> None:
    wheel = "tests/install/test_the_runtime_installs_alone_from_the_wheel.py::test_it"
    faults = "tests/workers/test_order_and_loss_under_failures.py::test_it[cluster]"
    browser = "tests/dashboard/test_overview_updates_live_in_the_browser.py::test_it"
    quick = "tests/dashboard/test_api_queue.py::test_it"
    ranks = [start_rank(wheel, True), start_rank(faults, True), start_rank(browser, True)]
    assert [*ranks, start_rank(quick, False)] == [0, 0, 1, 2]


def test_every_long_unit_exists() -> None:
    assert all(ROOT.joinpath(unit).exists() for unit in LONG_UNITS)
