"""A local Redis Cluster for the benchmarks and the tests: every node a redis-server
(``--cluster-enabled yes``) on a free port of 127.0.0.1, joined by ``redis-cli --cluster
create``; the cluster counterpart of ``bench.common.private_redis``."""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


@dataclass
class ClusterNode:
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None


@dataclass
class LocalCluster:
    """A Redis Cluster of ``masters`` masters with ``replicas`` replicas each, every node a
    redis-server on a free port of 127.0.0.1; ``url`` is the ``redis+cluster://`` URL the
    project's clients take (docs/cluster.md)."""

    nodes: list[ClusterNode]
    workdir: str

    @property
    def url(self) -> str:
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port}/0"

    def plain_url(self, port: int | None = None) -> str:
        return f"redis://127.0.0.1:{port or self.nodes[0].port}/0"

    def node(self, port: int) -> ClusterNode:
        return next(n for n in self.nodes if n.port == port)

    def masters(self) -> dict[int, list[int]]:
        """Live masters' ports with the ports of their live replicas, as the cluster
        itself reports them (CLUSTER NODES of any live node)."""
        for n in self.nodes:
            if not n.alive:
                continue
            try:
                raw = redis.Redis(port=n.port, socket_timeout=2).execute_command("CLUSTER", "NODES")
            except redis.RedisError:
                continue
            text = raw.decode() if isinstance(raw, bytes) else str(raw)
            return _masters_from_cluster_nodes(text)
        raise RuntimeError("no cluster node answers")

    def kill(self, port: int) -> None:
        """SIGKILL one node: no shutdown, no save (what a crashed host does)."""
        node = self.node(port)
        node.proc.kill()
        node.proc.wait(10)

    def restart(self, port: int, timeout: float = 30.0) -> None:
        """Start a killed node again on its port and directory: its ``nodes.conf`` makes it
        rejoin the cluster, as a replica of whichever node took its slots over (it starts
        without data and syncs from that master). Returns once it is attached and synced."""
        node = self.node(port)
        if node.alive:
            raise RuntimeError(f"node {port} is still running")
        node.proc = _start_cluster_node(
            shutil.which("redis-server") or "redis-server", self.workdir, port
        )
        _wait_ping(node)
        deadline = time.monotonic() + timeout
        while not (
            any(port in replicas for replicas in self.masters().values()) and _replica_synced(port)
        ):
            if time.monotonic() > deadline:
                raise RuntimeError(f"node {port} did not rejoin as a synced replica")
            time.sleep(0.1)

    def wait_healthy(self, timeout: float = 30.0) -> None:
        """Until every live node reports cluster_state:ok and every slot is served."""
        deadline = time.monotonic() + timeout
        while True:
            if all(_cluster_ok(n.port) for n in self.nodes if n.alive):
                return
            if time.monotonic() > deadline:
                raise RuntimeError("the local Redis Cluster did not become healthy")
            time.sleep(0.1)

    def flush(self) -> None:
        for master in self.masters():
            redis.Redis(port=master).flushall()

    def stop(self) -> None:
        for n in self.nodes:
            if n.alive:
                n.proc.kill()
                n.proc.wait(10)
        shutil.rmtree(self.workdir, ignore_errors=True)


def _masters_from_cluster_nodes(text: str) -> dict[int, list[int]]:
    masters: dict[str, int] = {}
    replicas: list[tuple[str, int]] = []
    for line in text.strip().splitlines():
        fields = line.split()
        node_id, address, flags, master_id = fields[0], fields[1], fields[2], fields[3]
        if "fail" in flags.split(",") or "noaddr" in flags:
            continue
        port = int(address.split("@")[0].rsplit(":", 1)[1])
        if "master" in flags.split(","):
            masters[node_id] = port
        else:
            replicas.append((master_id, port))
    out: dict[int, list[int]] = {port: [] for port in masters.values()}
    for master_id, port in replicas:
        if master_id in masters:
            out[masters[master_id]].append(port)
    return out


def _cluster_ok(port: int) -> bool:
    try:
        info = redis.Redis(port=port, socket_timeout=2).execute_command("CLUSTER", "INFO")
    except redis.RedisError:
        return False
    text = info.decode() if isinstance(info, bytes) else str(info)
    return "cluster_state:ok" in text and "cluster_slots_ok:16384" in text


@contextmanager
def redis_cluster(
    masters: int = 3, replicas: int = 1, node_timeout_ms: int = 1000
) -> Iterator[LocalCluster]:
    """Start a throw-away Redis Cluster (``redis-server --cluster-enabled yes`` per node,
    joined by ``redis-cli --cluster create``); yield it; stop every node after. Node
    timeout is 1 s by default so a killed master's replica is promoted within a few
    seconds; a longer one lets a node be stopped (SIGSTOP) without the cluster failing."""
    binary, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if binary is None or cli is None:
        raise RuntimeError("redis-server is not installed; run `make test` (it installs it)")
    workdir = tempfile.mkdtemp(prefix="lockstep-cluster-")
    nodes: list[ClusterNode] = []
    cluster = LocalCluster(nodes, workdir)
    try:
        for _ in range(masters * (1 + replicas)):
            port = _free_cluster_port()
            (Path(workdir) / str(port)).mkdir()
            node = _start_cluster_node(binary, workdir, port, node_timeout_ms)
            nodes.append(ClusterNode(port, node))
        for n in nodes:
            _wait_ping(n)
        addresses = [f"127.0.0.1:{n.port}" for n in nodes]
        subprocess.run(
            [
                cli,
                "--cluster",
                "create",
                *addresses,
                "--cluster-replicas",
                str(replicas),
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        cluster.wait_healthy(60)
        _wait_replicas_attached(cluster, masters, replicas)
        yield cluster
    finally:
        cluster.stop()


def _start_cluster_node(
    binary: str, workdir: str, port: int, node_timeout_ms: int = 1000
) -> subprocess.Popen[bytes]:
    """One cluster node on ``port``, its data and ``nodes.conf`` in ``workdir/<port>``."""
    node_dir = Path(workdir) / str(port)
    args = ["--port", str(port), "--bind", "127.0.0.1", "--dir", str(node_dir)]
    args += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
    args += ["--cluster-node-timeout", str(node_timeout_ms)]
    args += ["--cluster-replica-validity-factor", "0"]
    args += ["--save", "", "--appendonly", "no"]
    args += ["--loglevel", "notice", "--logfile", str(node_dir / "redis.log")]
    return subprocess.Popen([binary, *args], stdout=subprocess.DEVNULL)


def _replica_synced(port: int) -> bool:
    try:
        info = redis.Redis(port=port, socket_timeout=2).info("replication")
    except redis.RedisError:
        return False
    return info.get("master_link_status") == "up"


def _free_cluster_port() -> int:
    """A free port whose cluster bus port (+10000) is free too; Redis refuses ports above
    55535 for cluster nodes."""
    for _ in range(200):
        port = random.randint(20000, 55535)
        if _bindable(port) and _bindable(port + 10000):
            return port
    raise RuntimeError("no free port pair for a cluster node")


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _wait_ping(node: ClusterNode) -> None:
    client = redis.Redis(port=node.port)
    deadline = time.monotonic() + 10
    while not _pings(client):
        if time.monotonic() > deadline or not node.alive:
            raise RuntimeError("a cluster node did not start")
        time.sleep(0.05)
    client.close()


def _wait_replicas_attached(cluster: LocalCluster, masters: int, replicas: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        layout = cluster.masters()
        attached = len(layout) == masters and all(len(r) == replicas for r in layout.values())
        if attached and all(_replica_synced(p) for rs in layout.values() for p in rs):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"replicas did not attach: {layout}")
        time.sleep(0.1)
