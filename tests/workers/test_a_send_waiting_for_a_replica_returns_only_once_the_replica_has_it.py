"""``LOCKSTEP_SEND_WAIT_REPLICAS``: a send returns only once that many replicas have the
message (Redis WAIT on the connection that stored it); when none acknowledges in time the
send raises, saying the message may be stored, and a retry with the same idempotency key
stores nothing more."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest
import redis

from lockstep.workers import Producer, keys
from lockstep.workers.config import SendOptions
from lockstep.workers.errors import SendError
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import create_topic
from tests.support import free_port, redis_server


@pytest.fixture
def master_and_replica() -> Iterator[tuple[str, subprocess.Popen[bytes], redis.Redis]]:
    with redis_server() as master_url:
        port = free_port()
        workdir = tempfile.mkdtemp(prefix="lockstep-replica-")
        master_port = master_url.rsplit(":", 1)[1].split("/")[0]
        args = ["--port", str(port), "--bind", "127.0.0.1", "--dir", workdir]
        args += ["--save", "", "--appendonly", "no", "--loglevel", "warning"]
        args += ["--replicaof", "127.0.0.1", master_port]
        binary = shutil.which("redis-server") or "redis-server"
        proc = subprocess.Popen([binary, *args], stdout=subprocess.DEVNULL)
        replica = redis.Redis(port=port)
        deadline = time.monotonic() + 20
        while True:
            try:
                if replica.info("replication").get("master_link_status") == "up":
                    break
            except redis.ConnectionError:
                pass
            assert time.monotonic() < deadline, "the replica did not sync"
            time.sleep(0.05)
        try:
            yield master_url, proc, replica
        finally:
            proc.kill()
            proc.wait(10)
            shutil.rmtree(workdir, ignore_errors=True)


def test_an_acknowledged_send_is_already_on_the_replica(
    master_and_replica: tuple[str, subprocess.Popen[bytes], redis.Redis],
) -> None:
    url, _, replica = master_and_replica
    create_topic(redis.Redis.from_url(url), "orders", 2)
    producer = Producer(url, options=SendOptions(wait_replicas=1, wait_timeout_ms=5000))
    try:
        sent = [producer.send("orders", f"order-{i}", b"{}") for i in range(20)]
    finally:
        producer.close()

    for result in sent:
        stream = keys.stream(QueueRef("orders", result.queue))
        # Read at once after the send returned: WAIT made the replica have it already.
        assert replica.xrange(stream, f"{result.offset}-1", f"{result.offset}-1")


def test_a_send_no_replica_acknowledges_raises_maybe_stored_and_a_retry_stores_it_once(
    master_and_replica: tuple[str, subprocess.Popen[bytes], redis.Redis],
) -> None:
    url, replica_proc, _ = master_and_replica
    master = redis.Redis.from_url(url)
    create_topic(master, "orders", 1)
    replica_proc.kill()
    replica_proc.wait(10)
    producer = Producer(url, options=SendOptions(wait_replicas=1, wait_timeout_ms=200))
    try:
        for _ in range(2):
            with pytest.raises(SendError, match="LOCKSTEP_SEND_WAIT_REPLICAS") as failed:
                producer.send("orders", "order-1", b"{}", idempotency_key="pay-1")
            assert failed.value.maybe_stored is True
    finally:
        producer.close()

    assert master.xlen(keys.stream(QueueRef("orders", 0))) == 1
