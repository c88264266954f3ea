"""A real wheel, built once per session from the checkout's files, installed into fresh
virtual environments as an adopter would (docs/packaging.md).

Versions come from ``requirements.lock`` (as constraints, so an extra installs what the
suite was tested with); pip's cache makes a repeated install cheap."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PIP = (sys.executable, "-m", "pip", "--disable-pip-version-check")


@dataclass(frozen=True)
class Venv:
    """A virtual environment with Lockstep installed from the wheel."""

    path: Path

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def bin(self, name: str) -> Path:
        return self.path / "bin" / name

    def site_packages(self) -> Path:
        found = sorted(self.path.glob("lib/python3*/site-packages"))
        assert len(found) == 1, found
        return found[0]

    def env(self, **extra: str) -> dict[str, str]:
        """The suite's environment without what would put the checkout on the path or
        choose its settings (``make test`` exports PYTHONPATH and DJANGO_SETTINGS_MODULE),
        the environment's ``bin`` first on PATH, plus ``extra``."""
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("PYTHON", "DJANGO_", "VIRTUAL_ENV"))
        }
        env["PATH"] = f"{self.path / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
        return {**env, **extra}

    def run(self, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        """``python ARGS`` in the environment, outside the checkout and with ``env()``
        unless told otherwise (so nothing of the repository is on the path), output
        captured as text."""
        kwargs.setdefault("cwd", self.path)
        kwargs.setdefault("env", self.env())
        return subprocess.run(  # type: ignore[call-overload]
            [str(self.python), *args], capture_output=True, text=True, **kwargs
        )


def _checkout_files() -> list[str]:
    """What a clean checkout holds: the files git tracks (and new ones not ignored), as
    they are in the work tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (ROOT / name).exists()]


def _copy_checkout(target: Path) -> None:
    for name in _checkout_files():
        source, copy = ROOT / name, target / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            copy.symlink_to(source.readlink())
        elif source.is_file():
            shutil.copy2(source, copy)


def _quiet_pip(result: subprocess.CompletedProcess[str]) -> str:
    return "\n".join(
        line
        for line in (result.stdout + result.stderr).splitlines()
        if not line.startswith("WARNING: Location '")  # this machine's absent local indexes
    )


@pytest.fixture(scope="session")
def lockstep_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built once for the session from a copy of the checkout."""
    checkout = tmp_path_factory.mktemp("checkout")
    dist = tmp_path_factory.mktemp("dist")
    _copy_checkout(checkout)
    result = subprocess.run(
        [*PIP, "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(checkout)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, _quiet_pip(result)
    (wheel,) = dist.glob("lockstep-*.whl")
    return wheel


@pytest.fixture(scope="session")
def lock_constraints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``requirements.lock`` as a constraints file (pins without hashes)."""
    pins = [
        line.split()[0]
        for line in (ROOT / "requirements.lock").read_text().splitlines()
        if line and line[0].isalnum() and "==" in line
    ]
    path = tmp_path_factory.mktemp("constraints") / "constraints.txt"
    path.write_text("\n".join(pins) + "\n")
    return path


InstallVenv = Callable[..., Venv]


@pytest.fixture(scope="session")
def install_venv(
    tmp_path_factory: pytest.TempPathFactory, lockstep_wheel: Path, lock_constraints: Path
) -> InstallVenv:
    """``install_venv(extras=(), packages=())``: a fresh virtual environment with the wheel
    (and those extras, and those further packages) installed; made once per session for
    each combination."""
    made: dict[tuple[tuple[str, ...], tuple[str, ...]], Venv] = {}

    def install(extras: Sequence[str] = (), packages: Sequence[str] = ()) -> Venv:
        key = (tuple(sorted(extras)), tuple(packages))
        if key in made:
            return made[key]
        venv = Venv(tmp_path_factory.mktemp("venv-" + ("-".join(key[0]) or "runtime")))
        # The environment gets no pip of its own: the suite's pip installs into it
        # (``--python``), as an adopter's pip would, without seeding a pip first. Bytecode
        # is left to the first import (``--no-compile``): compiling all of Django, Spark's
        # and pyarrow's modules up front cost more than the tests that use them.
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv.path)], check=True)
        wanted = f"lockstep[{','.join(key[0])}]" if key[0] else "lockstep"
        command = [*PIP, "--python", str(venv.python), "install", "-q", "--no-input"]
        command += ["--no-compile", "--constraint", str(lock_constraints)]
        command += [f"{wanted} @ {lockstep_wheel.as_uri()}", *key[1]]
        # In the venv's own environment: with the checkout on PYTHONPATH, pip would take
        # a lockstep.egg-info left there by a build for the installed distribution.
        result = subprocess.run(command, capture_output=True, text=True, env=venv.env())
        assert result.returncode == 0, _quiet_pip(result)
        made[key] = venv
        return venv

    return install
