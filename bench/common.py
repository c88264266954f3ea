"""Shared pieces of the benchmarks: a private redis-server, loading a topic, timing a
consumer process until a group has committed everything."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from lockstep.workers import keys
from lockstep.workers.connection import connect
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import create_topic

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def private_redis() -> Iterator[str]:
    """A redis-server of the benchmark's own on a free port (never the user's Redis)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    workdir = tempfile.mkdtemp(prefix="lockstep-bench-")
    proc = subprocess.Popen(
        [
            shutil.which("redis-server") or "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            workdir,
        ],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = connect(url)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)


def load_topic(
    client: redis.Redis,
    topic: str,
    queues: int,
    messages: int,
    key_count: int,
    body: bytes = b"x" * 100,
) -> None:
    """Fill ``topic`` fast (batched produce script calls), keys spread by stable hash."""
    from lockstep.workers.hashing import queue_for_key
    from lockstep.workers.scripts import run_batch, script

    create_topic(client, topic, queues)
    produce = script(client, "produce")
    calls: list[tuple[list[str], list[object]]] = []
    for i in range(messages):
        key = f"k{i % key_count}"
        ref = QueueRef(topic, queue_for_key(key, queues))
        calls.append((keys.produce_keys(ref), [key, body, "{}", 0]))
        if len(calls) == 2000:
            run_batch(client, produce, calls)
            calls = []
    run_batch(client, produce, calls)


def committed_total(client: redis.Redis, topic: str, group: str, queues: int) -> int:
    pipe = client.pipeline(transaction=False)
    for q in range(queues):
        pipe.hget(keys.offset(QueueRef(topic, q), group), "committed")
    return sum(int(v or 0) for v in pipe.execute())


def time_consumer(
    redis_url: str,
    topic: str,
    group: str,
    queues: int,
    total: int,
    extra_args: list[str],
    env: dict[str, str] | None = None,
    timeout: float = 300.0,
) -> tuple[float, int]:
    """Run ``lockstep consume`` until ``group`` committed ``total`` messages. Returns
    (seconds from the first commit to the last, peak RSS in MB of the consumer)."""
    client = connect(redis_url)
    proc = subprocess.Popen(
        consume_command(topic, group, extra_args),
        cwd=ROOT,
        env=consume_env(redis_url, env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    started = None
    peak_rss = 0
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            done = committed_total(client, topic, group, queues)
            if started is None and done > 0:
                started = (time.monotonic(), done)
            peak_rss = max(peak_rss, rss_mb(proc.pid))
            if done >= total:
                break
            if proc.poll() is not None:
                raise RuntimeError(
                    f"consumer exited: {proc.stderr.read().decode()[-2000:]}"
                    if proc.stderr
                    else "consumer exited"
                )
            time.sleep(0.02)
        else:
            raise TimeoutError(f"{group} did not finish within {timeout}s")
        assert started is not None
        elapsed = time.monotonic() - started[0]
        measured = total - started[1]
        return elapsed / max(1, measured) * total, peak_rss
    finally:
        proc.terminate()
        proc.wait(30)


def consume_command(topic: str, group: str, extra_args: list[str]) -> list[str]:
    """``lockstep consume`` of one subscription (the runtime alone, as an adopter's worker
    runs it: no Django), as both benchmark harnesses start it."""
    return [
        sys.executable,
        "-m",
        "lockstep",
        "consume",
        "--topic",
        topic,
        "--group",
        group,
        *extra_args,
    ]


def consume_env(redis_url: str, env: dict[str, str] | None) -> dict[str, str]:
    return dict(os.environ, REDIS_URL=redis_url, PYTHONPATH=str(ROOT), **(env or {}))


def rss_mb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


class ConsumerProcess:
    """``lockstep consume`` in a subprocess, with its stderr kept in a file (a pipe nobody
    reads would block the consumer once full) and its peak RSS sampled by ``sample``."""

    def __init__(
        self,
        redis_url: str,
        topic: str,
        group: str,
        extra_args: list[str],
        env: dict[str, str] | None = None,
    ) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop/kill)
        self.proc = subprocess.Popen(
            consume_command(topic, group, extra_args),
            cwd=ROOT,
            env=consume_env(redis_url, env),
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
        )
        self.peak_rss_mb = 0

    def sample(self) -> None:
        """Update the peak RSS; raise if the consumer exited on its own."""
        self.peak_rss_mb = max(self.peak_rss_mb, rss_mb(self.proc.pid))
        if self.proc.poll() is not None:
            raise RuntimeError(f"consumer exited ({self.proc.returncode}): {self.stderr()}")

    def stderr(self, limit: int = 2000) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-limit:]

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(30)
        self._stderr.close()

    def stop(self) -> None:
        terminate(self.proc)
        self._stderr.close()


def terminate(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (a graceful stop) and wait for the exit; SIGKILL after 30 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
