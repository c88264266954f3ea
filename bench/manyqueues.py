"""Many-queues benchmark (issue #26): what one consumer process owning N queues of a topic
costs, on a private redis-server, or with ``cluster`` on a private local Redis Cluster of
three masters (the connection and command figures are then the largest of one node's).

For each ordering (queue ordering with a no-op handler; key ordering with 16 lanes), one
``lockstep consume`` process subscribes to a topic of N queues and is left until it owns
them all. Then, in that process:

- ``threads``: its thread count (``/proc/<pid>/status``), settled and idle;
- ``redis_connections``: the consumer's connections in ``CLIENT LIST`` (a consumer names
  them after itself, ``outage.connection_name``);
- ``idle_commands_per_s``: commands Redis processed (``INFO stats``) while every queue
  was idle for ``idle_s`` seconds, the harness's two ``INFO`` calls left out;
- ``wakeup_p50_ms`` / ``wakeup_p99_ms``: a message sent to a random idle queue until its
  handler starts (the handler stamps ``time.time()``; sent one at a time, each after the
  previous one was handled);
- ``busy_msgs_per_s``: every queue fed (``busy_messages`` spread over all N), no-op,
  from the handler's first completion to its last: the median of ``busy_rounds`` such
  phases of the same process (each in ``busy_msgs_per_s_rounds``; one phase lasts about
  a second, and on a shared 2-core machine one alone moves by a fifth from run to run);
  ``busy_msgs_per_s_8_queues``: the same through a fresh process owning 8 queues, in the
  same run; ``busy_ratio_to_8_queues``: the ratio of the two medians;
- ``redis_connections_busy``: the most of its connections seen while it was busy (checked
  every 0.1 s);
- ``rss_mb``: the process's resident memory once busy.
"""

from __future__ import annotations

import contextlib
import json
import random
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import redis

from bench.common import ConsumerProcess, load_topic, private_redis
from bench.handlers import stats_key, wakeup_key
from bench.local_cluster import redis_cluster
from lockstep.workers import keys
from lockstep.workers.connection import cluster_of, connect
from lockstep.workers.inspect import topic_state
from lockstep.workers.outage import connection_name
from lockstep.workers.redis_types import as_bytes
from lockstep.workers.refs import QueueRef
from lockstep.workers.scripts import script

HANDLER = "bench.handlers.many_queues"
LANES = 16
KEY_COUNT = 4096
SMALL_QUEUES = 8
# Short lock and heartbeat timings: the consumer owns the topic within seconds, not after
# RocketMQ's 20 s rebalance interval.
TIMINGS = {
    "LOCKSTEP_REBALANCE_INTERVAL": "1",
    "LOCKSTEP_HEARTBEAT_INTERVAL": "0.5",
}
CASES = {
    "queue": ["--ordering", "queue", "--batch-size", "32"],
    "key": ["--ordering", "key", "--lanes", str(LANES)],
}
BUSY_MESSAGES = 40_960
BUSY_ROUNDS = 3
CLUSTER_MASTERS = 3
# The harness's own clients, told apart from the consumer's in CLIENT LIST.
HARNESS = "manyqueues-harness"
# Commands in a second below which a freshly started consumer counts as settled: well
# under its start-up's thousands, above what an idle one sends.
SETTLED_COMMANDS = 100
TARGETS = {
    "queue_threads": 48,
    "key_threads": LANES + 48,
    "redis_connections": 8,
    "idle_commands_per_s": 200,
    "wakeup_p99_ms": 50,
    "busy_ratio_to_8_queues": 0.8,
}


def run(
    queues: int = 1024,
    idle_s: float = 30.0,
    wakeups: int = 200,
    busy_messages: int = BUSY_MESSAGES,
    settle_timeout: float = 300.0,
    cluster: bool = False,
    busy_rounds: int = BUSY_ROUNDS,
) -> dict[str, Any]:
    """Both orderings at ``queues`` queues; see the module docstring for the figures."""
    started = time.monotonic()
    result: dict[str, Any] = {"queues": queues, "lanes": LANES, "targets": TARGETS}
    result["server"] = f"cluster of {CLUSTER_MASTERS} masters" if cluster else "standalone"
    result["busy_rounds"] = busy_rounds
    busy = _Busy(busy_messages, busy_rounds)
    with _server(cluster) as url:
        for name, args in CASES.items():
            result[name] = _case(url, name, queues, args, idle_s, wakeups, busy, settle_timeout)
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


@contextlib.contextmanager
def _server(cluster: bool) -> Iterator[str]:
    if not cluster:
        with private_redis() as url:
            yield url
        return
    with redis_cluster(masters=CLUSTER_MASTERS, replicas=0) as local:
        yield local.url


def _harness(url: str) -> redis.Redis:
    return connect(url, client_name=HARNESS)


def _nodes(client: redis.Redis) -> list[redis.Redis]:
    """The server, or each master of the cluster, to ask for its own figures."""
    cluster = cluster_of(client)
    if cluster is None:
        return [client]
    return [cluster.get_redis_connection(node) for node in cluster.get_primaries()]


@dataclass(frozen=True)
class _Busy:
    """The busy load: ``messages`` per phase, ``rounds`` phases per process."""

    messages: int
    rounds: int


def _case(
    url: str,
    name: str,
    queues: int,
    args: list[str],
    idle_s: float,
    wakeups: int,
    busy: _Busy,
    settle_timeout: float,
) -> dict[str, Any]:
    client = _harness(url)
    topic, group = f"many-{name}", f"bench-{name}"
    started = time.monotonic()
    consumer = _owner(url, topic, group, queues, args, busy.messages, settle_timeout)
    try:
        settled_s = time.monotonic() - started
        _settle(client, consumer)
        out: dict[str, Any] = {
            "owned_after_s": round(settled_s, 1),
            "threads": _threads(consumer.proc.pid),
            "redis_connections": _connections(client),
            "idle_commands_per_s": _idle_rate(client, idle_s),
        }
        latencies = _wakeups(client, topic, queues, wakeups, consumer)
        out["wakeup_p50_ms"] = round(statistics.median(latencies), 2)
        out["wakeup_p99_ms"] = round(_percentile(latencies, 0.99), 2)
        most: list[int] = []
        rates = _busy_rounds(client, topic, group, queues, busy, consumer, most.append)
        out["busy_msgs_per_s"] = statistics.median(rates)
        out["busy_msgs_per_s_rounds"] = rates
        out["redis_connections_busy"] = max(most, default=0)
        out["rss_mb"] = consumer.peak_rss_mb
        out["threads_busy"] = _threads(consumer.proc.pid)
    finally:
        consumer.stop()
    small = _small(url, name, args, busy, settle_timeout)
    out["busy_msgs_per_s_8_queues"] = statistics.median(small)
    out["busy_msgs_per_s_8_queues_rounds"] = small
    out["busy_ratio_to_8_queues"] = round(
        out["busy_msgs_per_s"] / out["busy_msgs_per_s_8_queues"], 3
    )
    return out


def _small(url: str, name: str, args: list[str], busy: _Busy, settle_timeout: float) -> list[float]:
    """The same busy load through a process owning ``SMALL_QUEUES`` queues."""
    client = _harness(url)
    topic, group = f"few-{name}", f"bench-few-{name}"
    consumer = _owner(url, topic, group, SMALL_QUEUES, args, busy.messages, settle_timeout)
    try:
        # Its connections are counted too (and dropped), so both runs are measured alike.
        return _busy_rounds(client, topic, group, SMALL_QUEUES, busy, consumer, lambda _: None)
    finally:
        consumer.stop()


def _busy_rounds(
    client: redis.Redis,
    topic: str,
    group: str,
    queues: int,
    busy: _Busy,
    consumer: ConsumerProcess,
    connections: Callable[[int], object],
) -> list[float]:
    """``busy.rounds`` busy phases (``_busy``), each once the consumer is quiet again
    (its last commits written)."""
    rates: list[float] = []
    for _ in range(busy.rounds):
        _settle(client, consumer)
        rates.append(_busy(client, topic, group, queues, busy.messages, consumer, connections))
    return rates


def _owner(
    url: str, topic: str, group: str, queues: int, args: list[str], total: int, timeout: float
) -> ConsumerProcess:
    """A consumer process that owns every queue of a new topic of ``queues`` queues (its
    handler's counts end at ``total`` messages)."""
    client = _harness(url)
    load_topic(client, topic, queues, 0, key_count=KEY_COUNT)
    env = {**TIMINGS, "LOCKSTEP_BENCH_TOTAL": str(total)}
    consumer = ConsumerProcess(url, topic, group, ["--handler", HANDLER, *args], env=env)
    try:
        _until(lambda: _owned(client, topic, group) == queues, consumer, timeout)
    except BaseException:
        consumer.stop()
        raise
    return consumer


def _until(done: Callable[[], bool], consumer: ConsumerProcess, timeout: float) -> float:
    """Wait for ``done`` (sampling the consumer, which must stay up); seconds waited."""
    start = time.monotonic()
    while not done():
        consumer.sample()
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"not settled within {timeout}s: {consumer.stderr()}")
        time.sleep(0.1)
    return time.monotonic() - start


def _owned(client: redis.Redis, topic: str, group: str) -> int:
    state = topic_state(client, topic)
    return sum(
        1 for q in state["queues"] for g in q["groups"] if g["group"] == group and g["owner"]
    )


def _settle(client: redis.Redis, consumer: ConsumerProcess, timeout: float = 20.0) -> None:
    """Wait until the consumer is ``_quiet``; a runner that never is (a thread per queue
    polls its stream) is measured after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not _quiet(client, consumer.proc.pid):
        consumer.sample()


def _quiet(client: redis.Redis, pid: int) -> bool:
    """Settled: over one second the thread count did not move and Redis processed few
    commands (the new owner's reads of every queue's offsets and first entries, and
    its lock events, are over)."""
    threads, before = _threads(pid), _processed(client)
    time.sleep(1.0)
    return _threads(pid) == threads and _processed(client) - before <= SETTLED_COMMANDS


def _threads(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def _connections(client: redis.Redis) -> int:
    """The consumer's connections to the server (on a cluster: to the node it holds most
    to), by their name."""
    prefix = connection_name("")
    return max(
        sum(1 for c in node.client_list() if str(c.get("name", "")).startswith(prefix))
        for node in _nodes(client)
    )


def _processed_per_node(client: redis.Redis) -> list[int]:
    return [int(node.info("stats")["total_commands_processed"]) for node in _nodes(client)]


def _processed(client: redis.Redis) -> int:
    return sum(_processed_per_node(client))


def _idle_rate(client: redis.Redis, seconds: float) -> float:
    """Commands a second (on a cluster: on the busiest node)."""
    before = _processed_per_node(client)
    started = time.monotonic()
    time.sleep(seconds)
    after = _processed_per_node(client)
    elapsed = time.monotonic() - started
    # The first INFO is counted by the second; the second by neither.
    return round(max((a - b - 1) / elapsed for a, b in zip(after, before, strict=True)), 1)


def _wakeups(
    client: redis.Redis, topic: str, queues: int, samples: int, consumer: ConsumerProcess
) -> list[float]:
    """Milliseconds from each send to its handler's start."""
    produce = script(client, "produce")
    rng = random.Random(26)
    latencies = []
    for n in range(samples):
        ref = QueueRef(topic, rng.randrange(queues))
        body = json.dumps({"wakeup": n, "sent": time.time()}).encode()
        produce(keys=keys.produce_keys(ref), args=[f"w{n}", body, "{}", 0])
        reply = client.blpop([wakeup_key(topic)], timeout=10)
        if reply is None:
            consumer.sample()
            raise TimeoutError(f"wake-up {n} on {ref} was not handled within 10 s")
        latencies.append(float(as_bytes(reply[1]).decode()))
    return latencies


def _busy(
    client: redis.Redis,
    topic: str,
    group: str,
    queues: int,
    messages: int,
    consumer: ConsumerProcess,
    connections: Callable[[int], object],
    timeout: float = 300.0,
) -> float:
    """Messages per second over every queue, from the handler's first completion of the
    load to its last; the consumer's connections (``_connections``) are passed to
    ``connections`` at every check meanwhile."""
    client.delete(stats_key(topic, group))
    load_topic(client, topic, queues, messages, key_count=KEY_COUNT)

    def finished() -> bool:
        connections(_connections(client))
        return _finished(client, topic, group)

    _until(finished, consumer, timeout)
    raw = {
        as_bytes(k).decode(): as_bytes(v).decode()
        for k, v in client.hgetall(stats_key(topic, group)).items()
    }
    count, first_n = int(raw["count"]), int(raw["first_n"])
    seconds = float(raw["last_t"]) - float(raw["first_t"])
    if int(raw["violations"]):
        raise RuntimeError(f"{raw['violations']} order violations in {topic}/{group}")
    return round((count - first_n) / seconds, 1) if seconds > 0 else 0.0


def _finished(client: redis.Redis, topic: str, group: str) -> bool:
    """The handler published its final counts (``LOCKSTEP_BENCH_TOTAL`` reached)."""
    return client.hget(stats_key(topic, group), "final") == b"1"


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]
