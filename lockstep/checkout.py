"""The settings ``make run`` leaves for the other shells of a source checkout.

``make run`` (bin/run) starts its own Redis and keeps its data in the checkout's ``var/``;
it says so to the processes it starts through their environment only. A second shell's
``python manage.py dlq list`` would otherwise fall back to the default Redis on port 6379,
which may be another system's. So bin/run writes the settings it runs with to
``lockstep.env`` in its data directory (``write``), and ``manage.py`` and the checkout's
``lockstep`` command read that file first (``read_run_file``), as if its variables had
been exported: a variable already in the environment wins, and the settings file
(``LOCKSTEP_ENV_FILE`` or ``.env``) is read after it, as always.

"In the checkout": ``manage.py`` always is; the ``lockstep`` command is when this package
runs from a source checkout (``checkout_root``), whatever the working directory. An
installed Lockstep never reads the file. The file is looked for in ``LOCKSTEP_DATA_DIR``
when that is set, else in the checkout's ``var/``.

When ``make run`` stops, the file stays (the data it points at stays too) and its first
line says when that run stopped, so a command still acts on the demo's Redis and
database, and fails while that Redis is down, instead of on whatever answers on 6379."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lockstep.workers.redact import mask_url

RUN_FILE = "lockstep.env"
PACKAGE_DIR = Path(__file__).resolve().parent
# Passed on when the run had them in its environment, besides REDIS_URL, LOCKSTEP_DATA_DIR
# and the settings file, which are always written: together they say where the run's data
# is (Redis, broker, channel layer, database, analytics data set). Tunings are left out:
# they are each shell's own business.
PASSED_ON = (
    "CELERY_BROKER_URL",
    "CHANNELS_REDIS_URL",
    "LOCKSTEP_REDIS_CLUSTER",
    "DATABASE_URL",
    "LOCKSTEP_ANALYTICS_URI",
)
NOTE = (
    "# The settings of that run, read by manage.py and the lockstep command of this checkout",
    "# (lockstep/checkout.py); a variable set in their environment wins over this file.",
)
STOPPED = "; stopped "


@dataclass(frozen=True)
class RunFile:
    path: Path
    about: str  # which run wrote it, and when that run stopped (its first line)


# The run file this process read (``read_run_file``); None when it read none.
loaded: RunFile | None = None


def checkout_root(package_dir: Path = PACKAGE_DIR) -> Path | None:
    """The source checkout this package runs from, or None when it is installed: in a
    checkout the package's sub-packages are links to the checkout's folders
    (``lockstep/workers -> ../workers``) and ``manage.py`` sits beside it, where a wheel
    has neither. An editable install runs the checkout's code, so it counts."""
    root = package_dir.parent
    if (package_dir / "workers").is_symlink() and (root / "manage.py").is_file():
        return root
    return None


def run_file(root: Path, environ: Mapping[str, str]) -> Path:
    """Where the checkout at ``root`` has its run file: in ``LOCKSTEP_DATA_DIR`` (relative
    to the working directory) when set, else in ``root/var``."""
    data = environ.get("LOCKSTEP_DATA_DIR", "").strip()
    return (Path(data).expanduser() if data else root / "var").absolute() / RUN_FILE


def read_run_file(root: Path) -> RunFile | None:
    """Put the variables of the checkout's run file into ``os.environ``, each only when the
    environment does not have it; None (and nothing changed) when there is no file."""
    global loaded
    path = run_file(root, os.environ)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    import environ  # django-environ, as the settings read theirs; only a checkout gets here

    environ.Env.read_env(io.StringIO(text))
    loaded = RunFile(path, text.partition("\n")[0].removeprefix("# "))
    return loaded


def read_checkout_run_file() -> RunFile | None:
    """``read_run_file`` when this package runs from a checkout; else nothing is read."""
    root = checkout_root()
    return read_run_file(root) if root is not None else None


def stores_line(redis_url: str, database: str = "") -> str:
    """One line saying which Redis (its password masked) and which database a command
    uses, and the run file they came from when one was read."""
    line = f"Lockstep: Redis {mask_url(redis_url)}"
    if database:
        line += f", database {database}"
    if loaded is not None:
        line += f" (from {loaded.path}: {loaded.about})"
    return line


def write_run_file(path: Path, values: Mapping[str, str], about: str) -> None:
    """Write ``values`` (name -> value) to ``path``, ``about`` as its first line."""
    lines = [f"# {about}", *NOTE, *(f"{name}={_quoted(name, v)}" for name, v in values.items())]
    _replace(path, "\n".join(lines) + "\n")


def _replace(path: Path, text: str) -> None:
    """``path`` holds ``text``, readable by its owner only (URLs may carry passwords).
    Written whole, then renamed: a command reading meanwhile sees the previous file or
    this one, never half of it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(descriptor, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(partial, path)


def _quoted(name: str, value: str) -> str:
    """django-environ takes what is between single quotes as it is (spaces, ``#``, ``$``);
    only a line break cannot be written."""
    if "\n" in value or "\r" in value:
        raise ValueError(f"{name} holds a line break: it cannot be written to {RUN_FILE}")
    return f"'{value}'"


def mark_stopped(path: Path, started_by: str, at: datetime) -> bool:
    """Add to the first line of the run file at ``path`` when its run stopped, if that
    run is ``started_by`` (a later ``make run`` may have written the file since);
    whether it was marked."""
    try:
        first, _, rest = path.read_text(encoding="utf-8").partition("\n")
    except FileNotFoundError:
        return False
    if not first.startswith(f"# {started_by} ") or STOPPED in first:
        return False
    _replace(path, f"{first}{STOPPED}{_when(at)}\n{rest}")
    return True


def run_settings(settings: Any, exported: Mapping[str, str]) -> dict[str, str]:
    """What the run file holds: the settings' Redis, data directory and settings file, and
    the variables of ``PASSED_ON`` that were ``exported`` (not empty)."""
    values = {"REDIS_URL": settings.REDIS_URL, "LOCKSTEP_DATA_DIR": str(settings.LOCKSTEP_DATA_DIR)}
    if settings.LOCKSTEP_ENV_FILE:
        values["LOCKSTEP_ENV_FILE"] = settings.LOCKSTEP_ENV_FILE
    values |= {name: exported[name] for name in PASSED_ON if exported.get(name, "").strip()}
    return values


def _when(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _who() -> str:
    """The run, named by the process that starts this one (bin/run's shell)."""
    return f"make run (bin/run, process {os.getppid()})"


def _write() -> int:
    exported = dict(os.environ)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lockstep.dashboard.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        values = run_settings(settings, exported)
    except ImproperlyConfigured as exc:
        print(f"make run: configuration error: {exc}", file=sys.stderr)
        return 1
    path = Path(values["LOCKSTEP_DATA_DIR"]) / RUN_FILE
    write_run_file(path, values, f"{_who()} started {_when(datetime.now(UTC))}")
    print(f"Lockstep: settings for other shells in {path} (manage.py and lockstep read them)")
    return 0


def _stopped() -> int:
    path = Path(os.environ["LOCKSTEP_DATA_DIR"]) / RUN_FILE  # bin/run always exports it
    mark_stopped(path.absolute(), _who(), datetime.now(UTC))
    return 0


def main(argv: Sequence[str]) -> int:
    """``python -m lockstep.checkout write|stopped``, run by bin/run: ``write`` after its
    Redis started and before the dashboard starts, ``stopped`` as it ends."""
    verbs = {"write": _write, "stopped": _stopped}
    if len(argv) != 1 or argv[0] not in verbs:
        print("usage: python -m lockstep.checkout write|stopped", file=sys.stderr)
        return 2
    return verbs[argv[0]]()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
