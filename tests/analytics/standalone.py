"""A real Spark standalone cluster for tests: one master and one worker (1 core, 1 GiB)
started from the pyspark installation's ``bin/spark-class``, on 127.0.0.1 and free ports,
in a work folder of their own; both stopped (with their executors) and the folder removed
on the way out, whatever happened."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class Cluster:
    url: str  # spark://127.0.0.1:<port>
    web_url: str  # the master's web UI (its /json/ tells workers and applications)
    env: dict[str, str]  # what a driver process needs to reach it from this host

    def status(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as reply:
            return dict(json.load(reply))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_env(workdir: Path) -> dict[str, str]:
    """Daemons, drivers and executors on loopback, with this venv's Python for the
    executors' Python workers."""
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(workdir / "logs"),
        "SPARK_WORKER_DIR": str(workdir / "work"),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }


@contextmanager
def standalone_cluster(workdir: Path) -> Iterator[Cluster]:
    workdir.mkdir(parents=True, exist_ok=True)
    env = spark_env(workdir)
    port, web_port, worker_web_port = free_port(), free_port(), free_port()
    url, web_url = f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{web_port}"
    cluster = Cluster(url, web_url, env)
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, workdir, ignore_errors=True)
        master = _daemon(
            stack,
            workdir / "master.log",
            env,
            "org.apache.spark.deploy.master.Master",
            ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(web_port)],
        )
        resources = ["--cores", "1", "--memory", "1g", "--work-dir", str(workdir / "work")]
        worker = _daemon(
            stack,
            workdir / "worker.log",
            env,
            "org.apache.spark.deploy.worker.Worker",
            [url, "--host", "127.0.0.1", "--webui-port", str(worker_web_port), *resources],
        )
        _wait_for_worker(cluster, [master, worker], workdir)
        yield cluster


def _daemon(
    stack: ExitStack, log: Path, env: dict[str, str], main_class: str, args: list[str]
) -> subprocess.Popen[bytes]:
    """Start ``spark-class main_class args`` in a process group of its own (spark-class
    execs the JVM; a worker's executors are its children), stopped when ``stack``
    closes."""
    out = stack.enter_context(log.open("wb"))
    proc = subprocess.Popen(
        [str(SPARK_HOME / "bin" / "spark-class"), main_class, *args],
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    stack.callback(_stop, proc)
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)  # its own group: the JVM and anything it started
        except ProcessLookupError:
            return
        try:
            proc.wait(STOP_TIMEOUT_S)
            return
        except subprocess.TimeoutExpired:
            continue


def _wait_for_worker(cluster: Cluster, procs: list[subprocess.Popen[bytes]], workdir: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            break
        try:
            if any(w.get("state") == "ALIVE" for w in cluster.status().get("workers", [])):
                return
        except (urllib.error.URLError, OSError, ValueError):
            pass  # the master's web UI is not up yet
        time.sleep(0.1)
    logs = "\n".join(
        f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}"
        for log in sorted(workdir.glob("*.log"))
    )
    raise RuntimeError(f"no worker registered with {cluster.url}\n{logs}")
