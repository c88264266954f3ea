"""The day's ``messages`` (in time chunks) and ``samples`` rows, from a plan."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from bench.analytics_data.plan import BIN_MS, BINS, Plan
from bench.analytics_data.topology import ERROR_TEXTS, GROUP_NAMES, KEY_NAMES, TOPIC_NAMES, Ints
from lockstep.analytics.layout import MESSAGES, SAMPLES, arrow_schema

# Message bodies: lognormal around a few hundred bytes.
SIZE_MEDIAN, SIZE_SIGMA, SIZE_RANGE = 350.0, 0.6, (16, 65_536)


def message_chunks(plan: Plan, rng: np.random.Generator, chunks: int) -> Iterator[pa.Table]:
    """The messages of each of ``chunks`` equal spans of the day, queue by queue in
    offset order, as a queue's stream is. Within its 10 s a message's produce time
    follows its rank, so offsets and produce times rise together."""
    topo = plan.topo
    topics = pa.array(TOPIC_NAMES)
    for i in range(chunks):
        low, high = i * BINS // chunks, (i + 1) * BINS // chunks
        width = high - low
        per_bin = plan.counts[:, low:high].ravel()  # cell-major
        cell_bin = np.repeat(np.arange(per_bin.size), per_bin)
        cell, b = cell_bin // width, low + cell_bin % width
        first = np.cumsum(per_bin) - per_bin
        rank = np.arange(len(cell_bin)) - first[cell_bin]
        spread = (rank + rng.random(len(rank))) * BIN_MS / per_bin[cell_bin]
        offset = plan.start[cell] + plan.cum[cell, b] + rank
        size = rng.lognormal(np.log(SIZE_MEDIAN), SIZE_SIGMA, len(rank))
        yield pa.table(
            {
                "topic": topics.take(pa.array(topo.cell_topic[cell])),
                "queue": pa.array(topo.cell_queue[cell], pa.int32()),
                "offset": pa.array(offset),
                "key": KEY_NAMES.take(pa.array(plan.keys.keys_of(cell, offset))),
                "produced_ms": pa.array(plan.day0 + b * BIN_MS + spread.astype(np.int64)),
                "size": pa.array(np.clip(size, *SIZE_RANGE).astype(np.int32)),
            },
            schema=arrow_schema(MESSAGES),
        )


def sample_rows(plan: Plan) -> pa.Table:
    """One row per (sample instant, queue group), in time order, as the sampler writes
    them; key-ordered groups list their blocked and held keys."""
    topo = plan.topo
    count = len(plan.sample_ms)
    qg = np.tile(np.arange(topo.qgs), count)
    s = np.repeat(np.arange(count), topo.qgs)
    ms = plan.sample_ms[s]
    committed, max_offset = plan.committed[qg, s], plan.max_offset[qg, s]
    parked, retries = plan.parked[qg, s], plan.retries[qg, s]
    lag = max_offset - committed + parked
    behind = committed < max_offset
    cell = topo.qg_cell[qg]
    head_key = KEY_NAMES.take(pa.array(plan.keys.keys_of(cell, committed)))
    owner, _ = plan.owners_at(qg, ms)
    key_ordered = topo.qg_key_ordered[qg]
    blocked, blocked_count, held_keys = _blocked_keys(plan, qg, s)
    state = np.where(
        (retries > 0) & ~key_ordered, "suspended", np.where(lag > 0, "consuming", "idle")
    )
    return pa.table(
        {
            "ts_ms": pa.array(ms),
            "topic": pa.array(TOPIC_NAMES).take(pa.array(topo.cell_topic[cell])),
            "group": pa.array(GROUP_NAMES).take(pa.array(topo.qg_group[qg])),
            "queue": pa.array(topo.cell_queue[cell], pa.int32()),
            "max_offset": pa.array(max_offset),
            "committed_offset": pa.array(committed),
            "lag": pa.array(lag),
            "time_lag_s": pa.array(plan.time_lag_s[qg, s]),
            "owner": pa.array(plan.owner_names).take(pa.array(owner)),
            "state": pa.array(state),
            "head_offset": pa.array(committed, mask=~behind),
            "head_key": pa.array(head_key.to_numpy(zero_copy_only=False), mask=~behind),
            "retries": pa.array(retries, pa.int32()),
            "blocked_count": pa.array(blocked_count, pa.int32(), mask=~key_ordered),
            "held_keys": pa.array(held_keys, pa.int32(), mask=~key_ordered),
            "parked": pa.array(parked),
            "blocked_keys": blocked,
        },
        schema=arrow_schema(SAMPLES),
    )


def _blocked_keys(plan: Plan, qg: Ints, s: Ints) -> tuple[pa.Array, Ints, Ints]:
    """The ``blocked_keys`` lists of rows (``qg``, ``s``) (row = s * qgs + qg), and per
    row how many of the listed keys are retrying and how many held."""
    qgs = plan.topo.qgs
    rows: list[int] = []
    fields: dict[str, list[object]] = {
        n: [] for n in ("key", "offset", "retries", "waiting", "since_ms", "error", "held")
    }
    for e in plan.episodes:
        if e.level != "key":
            continue
        for at in range(e.first, e.last + 1):
            is_held = e.held_from is not None and at >= e.held_from
            rows.append(at * qgs + e.qg)
            fields["key"].append(KEY_NAMES[e.key].as_py())
            fields["offset"].append(e.offset)
            fields["retries"].append(int(plan.retries[e.qg, at]))
            waiting = int(plan.parked[e.qg, at]) if is_held else (at - e.first) // 2
            fields["waiting"].append(waiting)
            fields["since_ms"].append(e.since_ms)
            fields["error"].append(ERROR_TEXTS[e.error])
            fields["held"].append(is_held)
    order = np.argsort(rows, kind="stable")
    listed = np.array(rows, dtype=np.int64)[order]
    per_row = np.bincount(listed, minlength=len(qg))
    held = np.bincount(
        listed, weights=np.array(fields["held"], dtype=float)[order], minlength=len(qg)
    )
    struct_type = arrow_schema(SAMPLES).field("blocked_keys").type.value_type
    entries = pa.StructArray.from_arrays(
        [pa.array([fields[f.name][i] for i in order], f.type) for f in struct_type],
        fields=list(struct_type),
    )
    offsets = np.concatenate([[0], np.cumsum(per_row)]).astype(np.int32)
    assert len(per_row) == len(qg) == len(s)
    lists = pa.ListArray.from_arrays(pa.array(offsets), entries)
    held_count = held.astype(np.int64)
    return lists, per_row - held_count, held_count
