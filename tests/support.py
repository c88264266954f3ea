"""Helpers shared by the test packages: a real redis-server on a free port, and a local
Redis Cluster (``bench.local_cluster``)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import redis

from bench.local_cluster import ClusterNode, LocalCluster, redis_cluster

T = TypeVar("T")

__all__ = [
    "ClusterNode",
    "LocalCluster",
    "RestartableRedis",
    "free_port",
    "redis_cluster",
    "redis_server",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def refused_port() -> Iterator[int]:
    """A port where connections are refused for as long as the block lasts: bound and
    never listened on. (A port ``free_port`` gave is free only until another worker's
    server takes it, and a test meant to find nothing there would reach that server.)"""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


@contextmanager
def redis_server(
    *, password: str = "", users: Sequence[str] = (), tls: bool = False
) -> Iterator[str]:
    """Start a throw-away redis-server on a free port; yield its URL; stop it after.

    ``password``: the server requires it (``requirepass``) and the URL carries it.
    ``users``: ACL rules, one user each (``"name on >password ~* &* +@all"``); the URL
    stays the default user's. ``tls``: the server speaks only TLS, with a self-signed
    certificate for 127.0.0.1 made for it; the URL is ``rediss://`` naming the CA file."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed; run `make test` (it installs it)")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="lockstep-redis-")
    args = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir]
    args += ["--loglevel", "warning"]
    auth = ""
    if password:
        args += ["--requirepass", password]
        auth = f":{password}@"
    for rules in users:
        args += ["--user", *rules.split()]
    if tls:
        ca = _self_signed_certificate(Path(workdir))
        args += ["--port", "0", "--tls-port", str(port), "--tls-auth-clients", "no"]
        args += ["--tls-cert-file", str(ca), "--tls-key-file", str(ca.with_suffix(".key"))]
        args += ["--tls-ca-cert-file", str(ca)]
        url = f"rediss://{auth}127.0.0.1:{port}/0?ssl_ca_certs={ca}"
    else:
        args += ["--port", str(port)]
        url = f"redis://{auth}127.0.0.1:{port}/0"
    proc = subprocess.Popen([binary, *args], stdout=subprocess.DEVNULL)
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


def _self_signed_certificate(workdir: Path) -> Path:
    """A certificate (``ca.pem``, also its own CA) and key (``ca.key``) for 127.0.0.1."""
    cert = workdir / "ca.pem"
    key = cert.with_suffix(".key")
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert)),
            *("-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    return cert


class RestartableRedis:
    """A redis-server that keeps its data across a stop and a start on the same port (it
    saves on SIGTERM), for tests of what happens while Redis is down."""

    def __init__(self, workdir: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "3600 1",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
                "--loglevel",
                "warning",
            ],
            stdout=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        try:
            while not _pings(client):
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("redis-server did not start")
                time.sleep(0.05)
        finally:
            client.close()

    def stop(self) -> None:
        """SIGTERM: with a save point configured, Redis saves its data first."""
        if self.running:
            assert self.proc is not None
            self.proc.terminate()
            self.proc.wait(10)


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def wait_until(
    predicate: Callable[[], Any],
    timeout: float,
    what: str | Callable[[], str],
    interval: float = 0.05,
) -> Any:
    """Poll ``predicate`` until it returns something truthy; return that, or fail naming
    ``what`` (a callable is asked at the time of failure) after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            description = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {description}")
        time.sleep(interval)


def probe_until(
    probe: Callable[[], T], done: Callable[[T], bool], timeout: float = 15.0, interval: float = 0.05
) -> T:
    """Call ``probe`` until ``done(value)``; return the last value either way, so the caller
    asserts on what was really observed."""
    deadline = time.monotonic() + timeout
    value = probe()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(interval)
        value = probe()
    return value
