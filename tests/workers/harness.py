"""What the worker tests share: consumer processes, short timings, and readers of what the
recording handler and the event log left in Redis."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import redis

from lockstep.workers import Consumer, Subscription, keys
from lockstep.workers.config import Timings
from lockstep.workers.connection import cluster_of
from lockstep.workers.events import read_all_events
from lockstep.workers.refs import QueueRef
from tests.support import wait_until
from tests.workers.handlers import HANDLED

REPO = Path(__file__).resolve().parents[2]
RECORD_HANDLER = "tests.workers.handlers.record"

# Short but safe timings: the client stops consuming 1 s before the broker frees a lock,
# renewals come four times per client expiry, and a silent member is dropped after five
# missed heartbeats. Rebalance every 5 s; membership is polled every 0.2 s so joins and
# leaves are acted on well inside one rebalance interval.
FAST = Timings(
    lock_ttl_s=3.0,
    client_lock_expiry_s=2.0,
    lock_renew_interval_s=0.5,
    rebalance_interval_s=5.0,
    membership_poll_s=0.2,
    heartbeat_interval_s=0.3,
    heartbeat_timeout_s=1.5,
    poll_block_s=0.1,
    event_flush_interval_s=0.1,
)

FAST_ENV = {
    "LOCKSTEP_LOCK_TTL": str(FAST.lock_ttl_s),
    "LOCKSTEP_CLIENT_LOCK_EXPIRY": str(FAST.client_lock_expiry_s),
    "LOCKSTEP_LOCK_RENEW_INTERVAL": str(FAST.lock_renew_interval_s),
    "LOCKSTEP_REBALANCE_INTERVAL": str(FAST.rebalance_interval_s),
    "LOCKSTEP_MEMBERSHIP_POLL": str(FAST.membership_poll_s),
    "LOCKSTEP_HEARTBEAT_INTERVAL": str(FAST.heartbeat_interval_s),
    "LOCKSTEP_HEARTBEAT_TIMEOUT": str(FAST.heartbeat_timeout_s),
    "LOCKSTEP_POLL_BLOCK": str(FAST.poll_block_s),
    "LOCKSTEP_EVENT_FLUSH_INTERVAL": str(FAST.event_flush_interval_s),
}


def recording_consumer(url: str, topic: str, group: str, consumer_id: str = "c1") -> Consumer:
    """A consumer (not started) of ``topic`` for ``group`` on ``FAST`` timings whose
    handler records what it handles (``handled``)."""
    sub = Subscription(topic=topic, group=group, handler=RECORD_HANDLER)
    return Consumer(url, [sub], timings=FAST, consumer_id=consumer_id)


def servers(client: redis.Redis) -> list[redis.Redis]:
    """The standalone server, or each master of the cluster, to ask for its own state."""
    cluster = cluster_of(client)
    if cluster is None:
        return [client]
    return [cluster.get_redis_connection(node) for node in cluster.get_primaries()]


def named_connections(server: redis.Redis, name: str) -> int:
    """How many connections named ``name`` ``server`` has (``CLIENT LIST``)."""
    return sum(1 for c in server.client_list() if c.get("name") == name)


def body(seq: int, **flags: Any) -> bytes:
    return json.dumps({"seq": seq, **flags}).encode()


# -- consumer processes --------------------------------------------------------------------
@dataclass
class ConsumerProcess:
    """One ``python -m lockstep consume`` child (the runtime alone, no Django: it starts
    in a third of the time) with its output in a log file."""

    redis_url: str
    topic: str
    group: str
    consumer_id: str
    log_dir: Path
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"{self.consumer_id}.log"

    def start(self) -> ConsumerProcess:
        env = {
            **os.environ,
            **FAST_ENV,
            "REDIS_URL": self.redis_url,
            "PYTHONPATH": str(REPO),
            "PYTHONFAULTHANDLER": "1",  # SIGABRT prints every thread's stack (stop())
            **self.env,
        }
        cmd = [
            sys.executable,
            "-m",
            "lockstep",
            "consume",
            "--topic",
            self.topic,
            "--group",
            self.group,
            "--handler",
            RECORD_HANDLER,
            "--consumer-id",
            self.consumer_id,
            *self.args,
        ]
        with self.log_path.open("wb") as out:
            self.proc = subprocess.Popen(
                cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def signal(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def kill(self) -> None:
        if self.running():
            self.signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(10)

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM (a graceful stop: finish, commit, unlock, leave) and wait for the exit.
        The default leaves room for a loaded machine: the last consumer of a group may be
        taking over every queue the others just left when its SIGTERM comes. One that does
        not stop in time is made to print every thread's stack (SIGABRT: the child runs
        with the fault handler on) before the assertion shows its output."""
        assert self.proc is not None
        if self.running():
            self.signal(signal.SIGCONT)  # in case a test left it paused
            self.signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGABRT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)
            self.kill()
            raise AssertionError(
                f"{self.consumer_id} did not stop within {timeout}s:\n{self.output()[-3000:]}"
            ) from None


def registered(client: redis.Redis, group: str, topic: str) -> set[str]:
    members = cast(list[bytes], client.zrange(keys.registry(topic, group), 0, -1))
    return {m.decode() for m in members}


def consumer_card(client: redis.Redis, consumer_id: str) -> dict[str, Any] | None:
    raw = client.get(keys.consumer_info(consumer_id))
    return json.loads(raw) if raw else None


# -- what the runtime left in Redis -------------------------------------------------------
Entry = tuple[bytes, dict[bytes, bytes]]


def stream_entries(client: redis.Redis, key: str) -> list[Entry]:
    return cast(list[Entry], client.xrange(key, "-", "+"))


def handled(client: redis.Redis) -> list[dict[str, Any]]:
    return [json.loads(r) for r in client.lrange(HANDLED, 0, -1)]


def handled_count(client: redis.Redis) -> int:
    return int(client.llen(HANDLED))


def events(client: redis.Redis, *types: str) -> list[dict[str, Any]]:
    out = read_all_events(client)  # every shard of the event log
    return [e for e in out if not types or e["type"] in types]


def redis_now_ms(client: redis.Redis) -> int:
    """Redis's clock in ms, the clock every lock expiry is measured by."""
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def wait_for_lock_expiry(client: redis.Redis, ref: QueueRef, group: str) -> None:
    """Return once Redis's clock has reached the ``expires_at`` the lock of ``ref`` for
    ``group`` has now: from then on the broker counts that grant expired (lock.lua,
    _fence.lua). A renewal meanwhile is not followed."""
    expires_ms = int(client.hget(keys.lock(ref, group), "expires_at") or 0)
    wait_until(
        lambda: redis_now_ms(client) >= expires_ms,
        10 + expires_ms / 1000 - redis_now_ms(client) / 1000,
        f"Redis's clock to reach the lock's expiry ({expires_ms} ms)",
        interval=0.01,
    )


def lock_owners(client: redis.Redis, topic: str, group: str, queues: int) -> dict[int, str]:
    """Queue -> owner of every lock that is live now (Redis clock)."""
    now_ms = redis_now_ms(client)
    pipe = client.pipeline(transaction=False)
    for q in range(queues):
        pipe.hgetall(keys.lock(QueueRef(topic, q), group))
    owners: dict[int, str] = {}
    for q, raw in enumerate(pipe.execute()):
        owner = raw.get(b"owner", b"").decode()
        if owner and int(raw.get(b"expires_at", b"0")) > now_ms:
            owners[q] = owner
    return owners


def queues_by_owner(owners: dict[int, str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(list)
    for q, owner in sorted(owners.items()):
        out[owner].append(q)
    return dict(out)


def fully_committed(client: redis.Redis, topic: str, group: str, queues: int) -> bool:
    """Every queue's committed offset has reached its max offset."""
    pipe = client.pipeline(transaction=False)
    for q in range(queues):
        pipe.get(keys.sequence(QueueRef(topic, q)))
        pipe.hget(keys.offset(QueueRef(topic, q), group), "committed")
    replies = pipe.execute()
    return all(int(replies[i] or 0) <= int(replies[i + 1] or 0) for i in range(0, len(replies), 2))


def stored_offset(client: redis.Redis, topic: str, group: str, queue: int) -> tuple[int, str]:
    """(committed, completed) as the offset hash ``ls:{topic:queue}:offset:<group>`` holds
    them: the low-water mark and the ranges completed above it."""
    raw = cast(dict[bytes, bytes], client.hgetall(keys.offset(QueueRef(topic, queue), group)))
    return int(raw.get(b"committed", b"0")), raw.get(b"completed", b"").decode()


def parked_keys(client: redis.Redis, topic: str, group: str, queue: int) -> dict[str, Any]:
    """Held or releasing keys of a queue (key ordering, after_dlq = hold) -> their state."""
    raw = cast(dict[bytes, bytes], client.hgetall(keys.parked_keys(QueueRef(topic, queue), group)))
    return {k.decode(): json.loads(v) for k, v in raw.items()}


def parked_offsets(client: redis.Redis, topic: str, group: str, queue: int, key: str) -> list[int]:
    """Offsets of one key's parked messages, in the order they will run."""
    found = cast(
        list[tuple[bytes, float]],
        client.zrange(
            keys.parked_messages(QueueRef(topic, queue), group, key), 0, -1, withscores=True
        ),
    )
    return [int(score) for _, score in found]


# -- checks ----------------------------------------------------------------------------------
def handlings_per_offset(records: Iterable[dict[str, Any]]) -> Counter[tuple[int, int]]:
    """How many times each (queue, offset) was handled successfully."""
    return Counter((r["q"], r["o"]) for r in records)


def first_handlings(records: Iterable[dict[str, Any]]) -> dict[str, list[int]]:
    """Per key, the seq of each message in the order of its first successful handling."""
    seen: set[tuple[str, int]] = set()
    out: dict[str, list[int]] = defaultdict(list)
    for r in records:
        if (r["k"], r["s"]) not in seen:
            seen.add((r["k"], r["s"]))
            out[r["k"]].append(r["s"])
    return dict(out)


def order_violations(
    records: Iterable[dict[str, Any]], produced: dict[str, int]
) -> dict[str, list[int]]:
    """Keys whose first handlings are not exactly 0, 1, ..., produced[key]-1 (a message
    lost, or handled for the first time before an earlier one of its key)."""
    firsts = first_handlings(records)
    return {
        k: firsts.get(k, []) for k, n in produced.items() if firsts.get(k, []) != list(range(n))
    }


Record = dict[str, Any]


def overlapping_handlings(records: Iterable[Record]) -> list[tuple[Record, Record]]:
    """Pairs of handlings of one queue by two different consumers that overlap in time."""
    by_queue: dict[int, list[Record]] = defaultdict(list)
    for r in records:
        by_queue[r["q"]].append(r)
    overlaps: list[tuple[Record, Record]] = []
    for rs in by_queue.values():
        latest: dict[str, Record] = {}  # consumer -> its handling that ended last
        for r in sorted(rs, key=lambda r: r["t0"]):
            overlaps.extend(
                (prev, r) for c, prev in latest.items() if c != r["c"] and prev["t1"] > r["t0"]
            )
            if r["c"] not in latest or latest[r["c"]]["t1"] < r["t1"]:
                latest[r["c"]] = r
    return overlaps
