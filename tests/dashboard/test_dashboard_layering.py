"""The web side's shape (docs/architecture.md): ``dashboard/web/`` is the foundation and
imports no feature app; the feature apps (``monitor``, ``deadletters``, ``alerts``,
``reports``, ``demo``) import the foundation and ``workers``, never each other. What
crosses goes through the foundation's registries, filled in ``AppConfig.ready()``. Imports
inside functions count as well: they cannot hide a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "dashboard"
FEATURES = ("monitor", "deadletters", "alerts", "reports", "demo")
FOUNDATION = "web"


def _imported_modules(path: Path) -> list[str]:
    """Every module one source file imports, at any depth (functions included)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
            if node.module == "lockstep.dashboard":  # from lockstep.dashboard import monitor
                found += [f"lockstep.dashboard.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return found


def _app_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["lockstep", "dashboard"] or len(parts) < 3:
        return None
    return parts[2]


def _imports_of(app: str, dashboard: Path = DASHBOARD) -> set[tuple[str, str]]:
    return {
        (str(path.relative_to(dashboard.parent)), module)
        for path in sorted((dashboard / app).rglob("*.py"))
        for module in _imported_modules(path)
    }


def _crossings(dashboard: Path = DASHBOARD) -> set[tuple[str, str]]:
    """(importing file, imported module) for every import of one feature app by another."""
    return {
        (source, module)
        for app in FEATURES
        for source, module in _imports_of(app, dashboard)
        if _app_of(module) in FEATURES and _app_of(module) != app
    }


def test_the_foundation_imports_no_feature_app() -> None:
    upward = {
        (source, module)
        for source, module in _imports_of(FOUNDATION)
        if _app_of(module) in FEATURES
    }

    assert upward == set()


def test_no_feature_app_imports_another() -> None:
    assert _crossings() == set()


def test_it_finds_a_feature_app_importing_another(tmp_path: Path) -> None:
    dashboard = tmp_path / "dashboard"
    (dashboard / "alerts").mkdir(parents=True)
    (dashboard / "alerts" / "rules.py").write_text(
        "from lockstep.dashboard.monitor.health import overview_stats\n"
    )
    (dashboard / "monitor").mkdir()
    (dashboard / "monitor" / "views.py").write_text("from lockstep.dashboard.web import pages\n")

    assert _crossings(dashboard) == {
        ("dashboard/alerts/rules.py", "lockstep.dashboard.monitor.health")
    }


def test_it_sees_an_import_between_feature_apps_inside_a_function(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text(
        "def late():\n    from lockstep.dashboard.alerts.models import Alert\n    return Alert\n"
    )

    assert _imported_modules(source) == ["lockstep.dashboard.alerts.models"]
    assert _app_of("lockstep.dashboard.alerts.models") == "alerts"
