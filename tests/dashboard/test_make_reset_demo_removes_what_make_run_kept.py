"""`make reset-demo` removes what `make run` keeps between runs (the database, Redis's
append-only files, the analytics data set), from the data directory bin/run uses:
``LOCKSTEP_DATA_DIR``, else the checkout's ``var/``. Nothing beside it is touched."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What a run of the demo leaves in its data directory.
KEPT = (
    "db.sqlite3",
    "db.sqlite3-wal",
    "redis/appendonlydir/appendonly.aof.1.incr.aof",
    "analytics/events/date=2026-11-29/part-0.parquet",
    "first-report.log",
)


def _kept_by_a_run(data_dir: Path) -> None:
    for name in KEPT:
        (data_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (data_dir / name).write_bytes(b"kept")


def _reset_demo(cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = ["make", "--no-print-directory", "-f", str(ROOT / "Makefile"), "reset-demo"]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def _environment(**given: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LOCKSTEP_DATA_DIR"}
    return env | given


def test_it_removes_the_data_directory_named_by_lockstep_data_dir(tmp_path: Path) -> None:
    data_dir, beside = tmp_path / "data", tmp_path / "beside.txt"
    _kept_by_a_run(data_dir)
    beside.write_text("not the demo's")

    result = _reset_demo(tmp_path, _environment(LOCKSTEP_DATA_DIR=str(data_dir)))

    assert result.returncode == 0, result.stderr
    assert not data_dir.exists()
    assert beside.read_text() == "not the demo's"


def test_it_removes_var_of_the_directory_it_runs_in_without_lockstep_data_dir(
    tmp_path: Path,
) -> None:
    checkout = tmp_path / "checkout"
    _kept_by_a_run(checkout / "var")

    result = _reset_demo(checkout, _environment())

    assert result.returncode == 0, result.stderr
    assert not (checkout / "var").exists()
    assert checkout.is_dir()
