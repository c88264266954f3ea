"""A master of a Redis Cluster (3 masters, 1 replica each; node timeout 1 s) is killed
with SIGKILL while producer threads send keyed messages and two consumers handle them in
order; its replica is promoted, and the killed node is started again (it rejoins as the
promoted master's replica, as a restarted host does: until then the promoted master has
no replica, so ``WAIT 1`` fails for its queues). Producers send with
``SendOptions(wait_replicas=1)`` (produce script + ``WAIT 1``) and an idempotency key per
message, and send a failed message again, with the same idempotency key, until it is
stored and acknowledged. Afterwards:

* every acknowledged send was handled, and per key the first handlings are in send order
  (a send acknowledged by ``WAIT 1`` is on the replica, so the promotion keeps it; a
  send that was not acknowledged was sent again);
* messages were handled more than once only within a bound. A queue is consumed again
  from the committed offset stored on the node that serves it: the killed master's
  queues only after the promotion, the others' as soon as their workers meet the
  failure (a call that reaches the dead node, or the whole cluster refusing commands
  until the promotion: CLUSTERDOWN, as Redis Cluster requires every slot to be served),
  maybe more than once before the promotion. A message handled twice was therefore
  first handled before the promotion at or above its queue's committed offset when the
  master died: for the killed master's queues as its replica held it (the promoted
  node's), for the others as their master held it. Those offsets are read just before
  the kill: committed offsets only grow, so a value read then is at most the one at the
  kill, while one read after it may already hold a commit of a worker that started
  again (and a read after the cluster went down fails). That set holds what was handled
  but not yet committed when the master died, what the replica had not received of the
  committed offsets, and what was handled between the kill and the promotion; a handled
  message whose store the replica had not received (its send was not acknowledged, so
  it was sent again and stored anew) is in it too. Every message handled twice must be
  in that set.

The test runs on its own cluster, so the suite's shared cluster is never failed over.
The master killed is one that serves queues of the topic but not the recording handler's
list (``tests.workers.handlers.HANDLED``), which is the test's record of what was
handled."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis

from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.config import SendOptions
from lockstep.workers.connection import cluster_of
from lockstep.workers.errors import SendError
from lockstep.workers.refs import QueueRef
from tests.support import LocalCluster, redis_cluster, wait_until
from tests.workers.conftest import StartConsumer
from tests.workers.handlers import DELAY_ENV, HANDLED
from tests.workers.harness import (
    body,
    fully_committed,
    handled,
    handled_count,
    lock_owners,
    order_violations,
    registered,
)

TOPIC, GROUP, QUEUES = "orders", "ledger", 8
PRODUCERS, KEYS_PER_PRODUCER = 4, 10
ROUND_PAUSE_S = 0.05  # each producer sends one message per key a round: ~800 sends/s
HANDLED_BEFORE_KILL = 1500
SEND_AFTER_PROMOTION_S = 2.0
SEND_GIVE_UP_S = 30.0  # a message that cannot be stored for this long fails the test
RETRY_PAUSE_S = 0.05


@pytest.fixture
def private_cluster() -> Iterator[LocalCluster]:
    with redis_cluster(masters=3, replicas=1) as cluster:
        yield cluster


@pytest.fixture
def redis_url(private_cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> str:
    """This test's own cluster for everything (handlers read ``REDIS_URL`` too)."""
    monkeypatch.setenv("REDIS_URL", private_cluster.url)
    return private_cluster.url


@dataclass
class Sender:
    """One producer thread's keys, what it got acknowledged, and its failed attempts."""

    keys: list[str]
    sent: Counter[str] = field(default_factory=Counter)
    failed: int = 0
    maybe_stored: int = 0
    duplicates: int = 0  # a retry answered "already stored" (the failed attempt was)
    error: str = ""

    def run(self, producer: Producer, stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                for key in self.keys:
                    self._send_until_stored(producer, key)
                time.sleep(ROUND_PAUSE_S)
        except Exception as exc:  # reported by the test, not lost in a thread
            self.error = repr(exc)

    def _send_until_stored(self, producer: Producer, key: str) -> None:
        seq = self.sent[key]
        deadline = time.monotonic() + SEND_GIVE_UP_S
        while True:
            try:
                result = producer.send(TOPIC, key, body(seq), idempotency_key=f"{key}/{seq}")
            except SendError as exc:
                self.failed += 1
                self.maybe_stored += exc.maybe_stored
                if time.monotonic() > deadline:
                    raise
                time.sleep(RETRY_PAUSE_S)
                continue
            self.duplicates += result.duplicate
            self.sent[key] = seq + 1
            return


def _queues_by_master(client: redis.Redis) -> dict[int, list[int]]:
    cluster = cluster_of(client)
    assert cluster is not None
    out: dict[int, list[int]] = {}
    for q in range(QUEUES):
        node = cluster.get_node_from_key(keys.stream(QueueRef(TOPIC, q)))
        out.setdefault(int(node.port), []).append(q)
    return out


def _committed_on(port: int, queues: list[int]) -> dict[int, int]:
    """The group's committed offsets as node ``port`` holds them (READONLY: a replica
    answers reads of its master's slots on that connection)."""
    node = redis.Redis(port=port, socket_timeout=2)
    try:
        pipe = node.pipeline(transaction=False)
        pipe.execute_command("READONLY")
        for q in queues:
            pipe.hget(keys.offset(QueueRef(TOPIC, q), GROUP), "committed")
        replies = pipe.execute()[1:]
    finally:
        node.close()
    return {q: int(r or 0) for q, r in zip(queues, replies, strict=True)}


def _at_risk(
    records: list[dict[str, Any]], committed: dict[int, int], until: float
) -> set[tuple[str, int]]:
    """(key, seq) of every message handled at or above its queue's ``committed`` offset
    before ``until`` (wall time)."""
    return {(r["k"], r["s"]) for r in records if r["o"] >= committed[r["q"]] and r["ts"] < until}


def test_a_master_failover_keeps_key_order_and_loses_no_acknowledged_send(
    private_cluster: LocalCluster,
    redis_url: str,
    redis_client: redis.Redis,
    start_consumer: StartConsumer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(DELAY_ENV, "2")  # handlers take 0-2 ms: a backlog builds up
    create_topic(redis_client, TOPIC, QUEUES)
    layout = private_cluster.masters()
    by_master = _queues_by_master(redis_client)
    cluster = cluster_of(redis_client)
    assert cluster is not None
    handled_on = int(cluster.get_node_from_key(HANDLED).port)
    candidates = [m for m in layout if m != handled_on and by_master.get(m)]
    assert candidates, f"no master serves queues but not {HANDLED}: {by_master}"
    victim = max(candidates, key=lambda m: len(by_master[m]))
    (replica,) = layout[victim]
    victim_queues = by_master[victim]

    for cid in ("fo-a", "fo-b"):
        start_consumer(TOPIC, GROUP, cid)
    wait_until(
        lambda: (
            len(lock_owners(redis_client, TOPIC, GROUP, QUEUES)) == QUEUES
            and registered(redis_client, GROUP, TOPIC) == {"fo-a", "fo-b"}
        ),
        30,
        "two consumers to hold all queues",
    )

    # retry_s=0: every failed attempt reaches the test's own retry, which counts it.
    producer = Producer(redis_url, options=SendOptions(wait_replicas=1, retry_s=0))
    senders = [
        Sender([f"order-{p}-{k}" for k in range(KEYS_PER_PRODUCER)]) for p in range(PRODUCERS)
    ]
    stop = threading.Event()
    threads = [threading.Thread(target=s.run, args=(producer, stop)) for s in senders]
    for t in threads:
        t.start()
    try:
        wait_until(
            lambda: handled_count(redis_client) >= HANDLED_BEFORE_KILL,
            60,
            f"{HANDLED_BEFORE_KILL} handlings before the kill",
        )
        # Where each queue will start again, as of now: the replica's offsets for the
        # victim's queues (the promoted node's), each other master's for its own.
        committed = _committed_on(replica, victim_queues)
        for master, queues in by_master.items():
            if master != victim:
                committed.update(_committed_on(master, queues))
        private_cluster.kill(victim)
        killed_at = time.time()
        wait_until(
            lambda: replica in private_cluster.masters(),
            30,
            f"the replica {replica} to be promoted",
        )
        promoted_at = time.time()
        private_cluster.restart(victim)  # the promoted master's replica for WAIT 1
        private_cluster.wait_healthy()
        rejoined_at = time.time()
        time.sleep(SEND_AFTER_PROMOTION_S)
    finally:
        stop.set()
        for t in threads:
            t.join(SEND_GIVE_UP_S + 10)
    producer.close()
    assert [s.error for s in senders if s.error] == []
    sent: Counter[str] = Counter()
    for s in senders:
        sent.update(s.sent)
    wait_until(
        lambda: fully_committed(redis_client, TOPIC, GROUP, QUEUES),
        60,
        "every queue to be committed to its end",
    )

    records = handled(redis_client)
    assert order_violations(records, dict(sent)) == {}
    handlings = Counter((r["k"], r["s"]) for r in records)
    twice = {m for m, n in handlings.items() if n > 1}
    at_risk = _at_risk(records, committed, promoted_at)
    unexplained = sorted(twice - at_risk)[:10]
    assert not unexplained, _handlings_of(unexplained, records, committed, killed_at, promoted_at)
    failed = sum(s.failed for s in senders)
    assert failed > 0, "no send failed: the kill did not hit the producers"
    on_victim = [r for r in records if r["q"] in victim_queues and r["ts"] > promoted_at]
    assert on_victim, "nothing of the killed master's queues was handled after the promotion"
    print(
        f"killed master {victim} (queues {victim_queues}), replica {replica} promoted after "
        f"{promoted_at - killed_at:.1f} s, old master back as its replica after "
        f"{rejoined_at - killed_at:.1f} s;"
        f" {sum(sent.values())} sends acknowledged, {failed} attempts failed "
        f"({sum(s.maybe_stored for s in senders)} maybe stored, "
        f"{sum(s.duplicates for s in senders)} retries found it stored); "
        f"{len(records)} handlings, {len(twice)} messages handled more than once "
        f"(at risk: {len(at_risk)}; on the killed master's queues: "
        f"{sum(1 for k, s in twice if _queue_of(records, k) in victim_queues)})"
    )


def _handlings_of(
    messages: list[tuple[str, int]],
    records: list[dict[str, Any]],
    committed: dict[int, int],
    killed_at: float,
    promoted_at: float,
) -> str:
    """Every handling of ``messages``: queue, offset (and the committed offset read before
    the kill), consumer, fencing token, and when it ended, in seconds after the kill."""
    lines = [f"promoted {promoted_at - killed_at:.2f} s after the kill; handlings:"]
    for key, seq in messages:
        for r in (r for r in records if (r["k"], r["s"]) == (key, seq)):
            lines.append(
                f"  {key}/{seq}: queue {r['q']} offset {r['o']} (committed {committed[r['q']]})"
                f" by {r['c']} token {r['tok']} at {r['ts'] - killed_at:+.2f} s"
            )
    return "\n".join(lines)


def _queue_of(records: list[dict[str, Any]], key: str) -> int:
    return next(int(r["q"]) for r in records if r["k"] == key)
