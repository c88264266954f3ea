"""Helpers shared by the test packages: a real redis-server on a free port."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import redis


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def redis_server() -> Iterator[str]:
    """Start a throw-away redis-server on a free port; yield its URL; stop it after."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed; run `make test` (it installs it)")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="lockstep-redis-")
    proc = subprocess.Popen(
        [
            binary,
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
            "--loglevel",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("redis-server did not start") from None
            time.sleep(0.05)
    try:
        yield url
    finally:
        client.close()
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)
