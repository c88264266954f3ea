"""Installed, Lockstep is one import namespace (docs/packaging.md): the repository's
``workers/``, ``dashboard/`` and ``analytics/`` are ``lockstep.workers``,
``lockstep.dashboard`` and ``lockstep.analytics``. Code that imported them by their folder
names would work in a checkout (the folders are on the path there) and break once
installed, or load the same module twice under two names."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("workers", "dashboard", "analytics")


def _python_files() -> list[Path]:
    """Every source file once: the namespace's own modules (its links lead to folders
    listed here anyway), the folders, the benchmarks, the tests and ``manage.py``."""
    folders = (*FOLDERS, "bench", "tests")
    found = [ROOT / "manage.py", *(ROOT / "lockstep").glob("*.py")]
    return sorted(found + [p for f in folders for p in (ROOT / f).rglob("*.py")])


def _imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return names


def test_no_source_file_imports_a_folder_by_its_bare_name() -> None:
    bare = [
        (str(path.relative_to(ROOT)), module)
        for path in _python_files()
        for module in _imported_modules(path)
        if module.split(".")[0] in FOLDERS
    ]

    assert bare == []


def test_the_namespace_links_name_the_repository_folders() -> None:
    links = {p.name: p.resolve() for p in (ROOT / "lockstep").iterdir() if p.is_symlink()}

    assert links == {name: ROOT / name for name in (*FOLDERS, "templates")}
