"""The runtime's shape (docs/architecture.md): ``workers/`` (``lockstep.workers``) runs
wherever there is a Redis, so it imports neither Django nor anything above it, and its
modules talk through public names only."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "workers"


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, imported names) for every import statement of one source file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names]
    return found


def _runtime_sources() -> list[Path]:
    return sorted(RUNTIME.rglob("*.py"))


# Run in a fresh interpreter where Django and the packages above the runtime cannot be
# imported at all, as on a host that has only Redis and the runtime. (Libraries may probe
# for Django themselves, e.g. kombu's JSON helpers; they must cope with its absence.)
_WITHOUT_WEB_SIDE = """
import importlib, importlib.abc, sys
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("django", "bench") or name.startswith(ABOVE):
            raise ImportError(f"{name} is not installed here")
        return None
ABOVE = ("lockstep.dashboard", "lockstep.analytics")
sys.meta_path.insert(0, Absent())
for name in sys.argv[1:]:
    importlib.import_module(name)
print("imported", len(sys.argv) - 1)
"""


def test_it_imports_every_runtime_module_where_django_is_not_installed() -> None:
    modules = [
        "lockstep." + ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in _runtime_sources()
    ]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_WEB_SIDE, *modules],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"imported {len(modules)}"


def test_no_runtime_module_imports_from_the_web_side_or_the_benchmarks() -> None:
    upward = [
        (str(path.relative_to(ROOT)), module)
        for path in _runtime_sources()
        for module, _ in _imports(path)
        if module.split(".")[0] in ("django", "bench")
        or module.startswith(("lockstep.dashboard", "lockstep.analytics"))
    ]

    assert upward == []


def test_no_runtime_module_imports_another_modules_private_names() -> None:
    private = [
        (str(path.relative_to(ROOT)), module, name)
        for path in _runtime_sources()
        for module, names in _imports(path)
        if module.startswith("lockstep.workers")
        for name in names
        if name.startswith("_")
    ]

    assert private == []
