"""A synthetic day of analytics data for the analytics benchmark (docs/analytics.md §6),
written in the real layout with ``analytics.storage.write_batch``.

About 88 % messages, 10 % events and 2 % samples over 64 queues of three topics, four
groups (one key-ordered) and 100,000 keys, with a diurnal rate, one skewed queue (hot
keys, several times its topic's mean), backlog waves, planted stuck episodes (queues and
keys, one key still blocked at midnight), lock churn, retries with error types and dead
letters. Deterministic for a given (rows, day, seed): ``make_plan`` alone tells what was
planted without generating a row.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np
import pyarrow as pa

from bench.analytics_data.events import event_rows
from bench.analytics_data.plan import HOUR, MIN_ROWS, Plan, make_plan
from bench.analytics_data.tables import message_chunks, sample_rows
from bench.analytics_data.topology import KEY_NAMES, SKEWED
from lockstep.analytics.layout import EVENTS, MESSAGES, SAMPLES
from lockstep.analytics.storage import write_batch

__all__ = ["MIN_ROWS", "SEED", "Generated", "generate", "make_plan", "planted"]

SEED = 20_261_123
# Rows of messages per write_batch: a handful of batches, each a few hours of the day
# (one file per hour it covers), so a day is a few dozen files, as the writer's are
# after compaction, and memory stays bounded while generating.
CHUNK_ROWS = 1_500_000
DIVISORS_OF_24 = (1, 2, 3, 4, 6, 8, 12, 24)


@dataclass(frozen=True)
class Generated:
    plan: Plan
    rows: dict[str, int]  # per data set
    batches: int
    files: int


def generate(uri: str, rows: int, day: date, seed: int = SEED) -> Generated:
    """Write ``rows`` rows for ``day`` under ``uri``, in ``batches`` time chunks."""
    plan = make_plan(rows, day, seed)
    rng = np.random.default_rng(seed + 1)
    chunks = next(d for d in DIVISORS_OF_24 if plan.sizes.messages / d <= CHUNK_ROWS or d == 24)
    edges = [plan.day0 + i * 24 // chunks * HOUR for i in range(chunks + 1)]
    files = 0
    written = {MESSAGES: 0, EVENTS: 0, SAMPLES: 0}
    for i, table in enumerate(message_chunks(plan, rng, chunks)):
        files += len(write_batch(uri, MESSAGES, table, _batch(i)))
        written[MESSAGES] += table.num_rows
    for data_set, table in ((EVENTS, event_rows(plan, rng)), (SAMPLES, sample_rows(plan))):
        for i, part in enumerate(_time_chunks(table, edges)):
            files += len(write_batch(uri, data_set, part, _batch(i)))
            written[data_set] += part.num_rows
    if sum(written.values()) != rows:  # a row outside the day would have been left out
        raise RuntimeError(f"wrote {written} rows instead of {rows}")
    return Generated(plan, written, chunks, files)


def _batch(i: int) -> str:
    return f"bench-{i:02d}"


def _time_chunks(table: pa.Table, edges: list[int]) -> list[pa.Table]:
    """``table`` (in time order) cut at ``edges``."""
    ms = table.column("ts_ms").to_numpy()
    cuts = np.searchsorted(ms, edges)
    return [table.slice(a, b - a) for a, b in itertools.pairwise(cuts)]


def planted(plan: Plan) -> dict[str, Any]:
    """What the job should find: the skewed queue and its hot keys, the episodes."""
    episodes = [
        {
            "topic": topic,
            "group": group,
            "queue": queue,
            "level": e.level,
            "key": KEY_NAMES[e.key].as_py(),
            "offset": e.offset,
            "open": e.outcome == "open",
            "outcome": e.outcome,
        }
        for e in plan.episodes
        for topic, group, queue in [plan.topo.label(e.qg)]
    ]
    return {
        "skewed_queue": {"topic": SKEWED[0], "queue": SKEWED[1]},
        "hot_keys": [KEY_NAMES[k].as_py() for k in plan.keys.hot_keys],
        "episodes": episodes,
    }
