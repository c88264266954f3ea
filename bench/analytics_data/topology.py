"""The synthetic deployment: topics, queues, groups, keys, consumers, error types.

64 queues in three topics, four groups (one of them key-ordered), 100,000 keys. A key's
queue is a hash of the key, as the producer's; which key a message carries is a hash of
its (queue, offset), so any stage of the generator can name the key of any message (the
head of a stuck queue, a retried offset) without the messages in memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

Ints = NDArray[np.int64]
Floats = NDArray[np.float64]


@dataclass(frozen=True)
class TopicSpec:
    name: str
    queues: int
    groups: tuple[str, ...]
    share: float  # of all messages


TOPICS = (
    TopicSpec("orders", 32, ("mailer", "billing"), 0.60),
    TopicSpec("payments", 16, ("ledger",), 0.25),
    TopicSpec("audit", 16, ("archiver",), 0.15),
)
TOPIC_NAMES = tuple(t.name for t in TOPICS)
GROUP_NAMES = tuple(g for t in TOPICS for g in t.groups)
KEY_ORDERED = frozenset({"billing"})  # blocked keys; the others stop the whole queue
KEYS = 100_000
KEY_NAMES = pa.array([f"cust-{i:05d}" for i in range(KEYS)])

# The skewed queue: a few hot keys hash to it and lift it to SKEW_FACTOR times its
# topic's mean; the hot keys share their traffic as HOT_WEIGHTS.
SKEWED = ("orders", 7)
SKEW_FACTOR = 4.0
HOT_WEIGHTS = (0.45, 0.33, 0.22)
# Spread of the other queues' rates and of keys' popularity (lognormal sigmas): mild,
# so no other queue comes near the skewed one.
QUEUE_RATE_SIGMA = 0.1
KEY_POPULARITY_SIGMA = 1.0

CONSUMERS = 4  # per group

# Error types of failed handlers, with their share of failures and a message.
ERRORS = (
    ("TimeoutError", "upstream did not answer within 30s", 0.40),
    ("ConnectionError", "connection reset by peer", 0.25),
    ("ValueError", "invalid amount ''", 0.15),
    ("KeyError", "'customer_id'", 0.10),
    ("IntegrityError", "duplicate key value violates unique constraint", 0.06),
    ("HTTPError", "503 Service Unavailable", 0.04),
)
ERROR_TYPES = tuple(e[0] for e in ERRORS)
ERROR_TEXTS = tuple(f"{e[0]}: {e[1]}" for e in ERRORS)
ERROR_P = np.array([e[2] for e in ERRORS]) / sum(e[2] for e in ERRORS)


def mix64(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """SplitMix64's finaliser: a well-spread 64-bit hash, vectorised (wraps mod 2**64)."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@dataclass(frozen=True)
class Topology:
    """Cells are (topic, queue) pairs, numbered topic by topic; queue groups (``qg``) are
    (cell, group) pairs, numbered cell by cell."""

    cell_topic: Ints
    cell_queue: Ints
    qg_cell: Ints
    qg_group: Ints  # index into GROUP_NAMES
    qg_key_ordered: NDArray[np.bool_]

    @property
    def cells(self) -> int:
        return len(self.cell_topic)

    @property
    def qgs(self) -> int:
        return len(self.qg_cell)

    def cell_of(self, topic: str, queue: int) -> int:
        t = TOPIC_NAMES.index(topic)
        return int(np.flatnonzero((self.cell_topic == t) & (self.cell_queue == queue))[0])

    def label(self, qg: int) -> tuple[str, str, int]:
        cell = int(self.qg_cell[qg])
        topic = TOPIC_NAMES[int(self.cell_topic[cell])]
        return topic, GROUP_NAMES[int(self.qg_group[qg])], int(self.cell_queue[cell])


def topology() -> Topology:
    cell_topic: list[int] = []
    cell_queue: list[int] = []
    qg_cell: list[int] = []
    qg_group: list[int] = []
    for t, spec in enumerate(TOPICS):
        for q in range(spec.queues):
            cell = len(cell_topic)
            cell_topic.append(t)
            cell_queue.append(q)
            for g in spec.groups:
                qg_cell.append(cell)
                qg_group.append(GROUP_NAMES.index(g))
    groups = np.array(qg_group, dtype=np.int64)
    return Topology(
        cell_topic=np.array(cell_topic, dtype=np.int64),
        cell_queue=np.array(cell_queue, dtype=np.int64),
        qg_cell=np.array(qg_cell, dtype=np.int64),
        qg_group=groups,
        qg_key_ordered=np.isin(groups, [GROUP_NAMES.index(g) for g in KEY_ORDERED]),
    )


@dataclass(frozen=True)
class KeyIndex:
    """Per cell, its keys with their cumulative share of the cell's messages: ``bounds``
    is ``cell + cumulative share`` (increasing over all cells), ``keys`` the key ids."""

    bounds: Floats
    keys: Ints
    hot_keys: tuple[int, ...]  # the skewed queue's hot keys, hottest first

    def keys_of(self, cell: Ints, offset: Ints) -> Ints:
        """The key id of the message at ``offset`` of ``cell`` (a pure function)."""
        h = mix64((cell.astype(np.uint64) << np.uint64(40)) ^ offset.astype(np.uint64))
        # 53 random bits in [0, 1), kept clear of 1.0 so cell + u stays in its cell.
        u = (h >> np.uint64(11)).astype(np.float64) * (2.0**-53) * (1.0 - 1e-9)
        found = np.searchsorted(self.bounds, cell.astype(np.float64) + u, side="right")
        return self.keys[found]


def key_index(rng: np.random.Generator, topo: Topology, hot_share: float) -> KeyIndex:
    """Keys spread over each topic's queues by hash, with lognormal popularity; in the
    skewed queue the hot keys carry ``hot_share`` of its messages."""
    bounds: list[Floats] = []
    keys: list[Ints] = []
    hot: tuple[int, ...] = ()
    first_cell = 0
    ids = np.arange(KEYS, dtype=np.int64)
    for t, spec in enumerate(TOPICS):
        salt = np.uint64(t + 1) << np.uint64(32)
        queue_of = (mix64(ids.astype(np.uint64) ^ salt) % np.uint64(spec.queues)).astype(np.int64)
        weight = rng.lognormal(0.0, KEY_POPULARITY_SIGMA, KEYS)
        if spec.name == SKEWED[0]:
            hot = _make_hot(rng, queue_of, weight, hot_share)
        order = np.lexsort((ids, queue_of))
        queue_sorted, weight_sorted = queue_of[order], weight[order]
        totals = np.bincount(queue_of, weights=weight, minlength=spec.queues)
        before = np.concatenate([[0.0], np.cumsum(totals)[:-1]])
        share = (np.cumsum(weight_sorted) - before[queue_sorted]) / totals[queue_sorted]
        last = np.searchsorted(queue_sorted, np.arange(spec.queues), side="right") - 1
        share[last] = 1.0
        bounds.append(first_cell + queue_sorted + share)
        keys.append(order)
        first_cell += spec.queues
    return KeyIndex(np.concatenate(bounds), np.concatenate(keys), hot)


def _make_hot(
    rng: np.random.Generator, queue_of: Ints, weight: Floats, hot_share: float
) -> tuple[int, ...]:
    candidates = np.flatnonzero(queue_of == SKEWED[1])
    hot = rng.choice(candidates, len(HOT_WEIGHTS), replace=False)
    others = weight[candidates].sum() - weight[hot].sum()
    hot_total = others * hot_share / (1.0 - hot_share)
    weight[hot] = hot_total * np.array(HOT_WEIGHTS)
    return tuple(int(k) for k in hot)


def consumer_name(group: str, generation: int, consumer: int) -> str:
    """A consumer id as the runtime makes it (host:pid); a deploy starts new processes."""
    return f"{group}@node{consumer + 1}:{4100 + 37 * generation + consumer}"
