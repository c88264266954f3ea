"""The day's ``events`` rows, from a plan: exactly ``plan.sizes.events`` of them.

Fixed by the plan: deploys (rebalances, locks released and acquired), lost locks (with
fencing rejections), the planted episodes' retries, dead letters, parks, replays and
discards. Scaled with the budget: lock-margin overruns and dead letters (busier queues get
more), commits (``COMMIT_SHARE``: an ``offset_committed`` per commit interval while the
offset moves) and transient retries with error types (the rest).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bench.analytics_data.plan import DAY_MS, HOUR, MINUTE, SECOND, Episode, Plan
from bench.analytics_data.topology import (
    CONSUMERS,
    ERROR_P,
    ERROR_TEXTS,
    ERROR_TYPES,
    GROUP_NAMES,
    KEY_NAMES,
    TOPIC_NAMES,
    TOPICS,
    Ints,
    consumer_name,
)
from lockstep.analytics.layout import EVENTS, arrow_schema

COMMIT_SHARE = 0.78
MARGIN_OVERRUN_SHARE = 0.004
DEAD_LETTER_SHARE = 0.008
REPLAYED, DISCARDED = 0.25, 0.10  # of the dead letters, hours later
MAX_RECONSUME_TIMES = 16
# Queue-ordered batches that fail are retried whole: this many offsets, this often.
BATCH_SIZES, BATCH_P = np.array([1, 2, 4, 8, 16, 32]), np.array([0.4, 0.2, 0.15, 0.1, 0.1, 0.05])
OPERATORS = ("olga", "omar")

_TYPES = arrow_schema(EVENTS)


class EventRows:
    """Collects event rows by type as Arrow tables of the events schema (without ids)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.parts: list[pa.Table] = []
        topo = plan.topo
        self._topic = pa.array(TOPIC_NAMES).take(pa.array(topo.cell_topic[topo.qg_cell]))
        self._group = pa.array(GROUP_NAMES).take(pa.array(topo.qg_group))
        self._queue = topo.cell_queue[topo.qg_cell]

    @property
    def count(self) -> int:
        return sum(t.num_rows for t in self.parts)

    def add(
        self,
        type_: str,
        ms: Ints,
        qg: Ints,
        details: list[str] | pa.Array,
        *,
        queue_level: bool = True,
        owner: tuple[Sequence[str], Sequence[int | None]] | None = None,
        **columns: Any,
    ) -> None:
        """Rows of ``type_`` at ``ms`` for queue groups ``qg``, by the owner at the time
        unless ``owner`` (consumers, tokens) says who. ``columns``: ``key`` (key ids),
        ``error`` (indices into ERRORS) or any other events column as an array."""
        n = len(ms)
        if not n:
            return
        if owner is None:
            index, tokens = self.plan.owners_at(qg, ms)
            consumer = pa.array(self.plan.owner_names).take(pa.array(index))
            token: pa.Array = pa.array(tokens)
        else:
            consumer, token = pa.array(owner[0]), pa.array(owner[1], pa.int64())
        data: dict[str, Any] = {
            "type": pa.array([type_] * n),
            "ts_ms": pa.array(ms),
            "topic": self._topic.take(pa.array(qg)),
            "group": self._group.take(pa.array(qg)),
            "queue": pa.array(self._queue[qg]) if queue_level else pa.nulls(n, pa.int32()),
            "key": KEY_NAMES.take(pa.array(columns.pop("key"))) if "key" in columns else None,
            "token": token,
            "consumer": consumer,
            "details": pa.array(details, pa.string()),
        }
        if data["key"] is None:
            data["key"] = pa.array([""] * n)
        if "error" in columns:
            data["error_type"] = pa.array(ERROR_TYPES).take(pa.array(columns.pop("error")))
        data.update(columns)
        arrays = [
            pa.array(data[f.name], f.type) if f.name in data else pa.nulls(n, f.type)
            for f in _TYPES
            if f.name != "id"
        ]
        names = [f.name for f in _TYPES if f.name != "id"]
        self.parts.append(pa.Table.from_arrays(arrays, names=names))

    def table(self) -> pa.Table:
        """All rows in time order, with stream ids ``<ms>-<seq>``."""
        rows = pa.concat_tables(self.parts)
        rows = rows.take(pc.sort_indices(rows, [("ts_ms", "ascending")]))
        ms = rows.column("ts_ms").to_numpy()
        run_start = np.flatnonzero(np.concatenate([[True], ms[1:] != ms[:-1]]))
        seq = np.arange(len(ms)) - np.repeat(run_start, np.diff(np.append(run_start, len(ms))))
        ids = pc.binary_join_element_wise(
            pc.cast(rows.column("ts_ms"), pa.string()), pc.cast(pa.array(seq), pa.string()), "-"
        )
        return rows.add_column(0, "id", ids).cast(_TYPES)


def event_rows(plan: Plan, rng: np.random.Generator) -> pa.Table:
    rows = EventRows(plan)
    _deploys(rows, rng)
    _handoffs(rows, rng)
    for e in plan.episodes:
        _episode(rows, rng, e)
    _margin_overruns(rows, rng, round(plan.sizes.events * MARGIN_OVERRUN_SHARE))
    _dead_letters(rows, rng, round(plan.sizes.events * DEAD_LETTER_SHARE))
    left = plan.sizes.events - rows.count
    if left < 0:
        raise ValueError(f"{plan.sizes.events} events are too few for one day's fixed events")
    _commits(rows, rng, min(left, round(plan.sizes.events * COMMIT_SHARE)))
    _retries(rows, rng, plan.sizes.events - rows.count)  # the rest, so the total is exact
    return rows.table()


def _group_qg(plan: Plan, group: str) -> int:
    return int(np.flatnonzero(plan.topo.qg_group == GROUP_NAMES.index(group))[0])


def _deploys(rows: EventRows, rng: np.random.Generator) -> None:
    """One ``rebalance`` per member of the group (no queue) at each deploy."""
    plan = rows.plan
    for group, at, generation in plan.deploys:
        topic = next(t for t in TOPICS if group in t.groups)
        ms = at + rng.integers(0, 2 * SECOND, CONSUMERS)
        details = [
            json.dumps(
                {
                    "old": [
                        q for q in range(topic.queues) if (q + generation - 1) % CONSUMERS == c
                    ],
                    "new": [q for q in range(topic.queues) if (q + generation) % CONSUMERS == c],
                    "members": CONSUMERS,
                    "refused": [],
                }
            )
            for c in range(CONSUMERS)
        ]
        consumers = [consumer_name(group, generation, c) for c in range(CONSUMERS)]
        qg = np.full(CONSUMERS, _group_qg(plan, group))
        rows.add(
            "rebalance", ms, qg, details, queue_level=False, owner=(consumers, [None] * CONSUMERS)
        )


def _handoffs(rows: EventRows, rng: np.random.Generator) -> None:
    """A lock released (deploy) or lost, then acquired by the next owner; a lost lock's
    owner sometimes writes once more and is refused (``fencing_rejected``)."""
    plan = rows.plan
    for h in plan.handoffs:
        qg = np.array([h.qg])
        ended = np.array([h.ended_ms])
        before = ([h.previous], [h.previous_token])
        if h.reason == "deploy":
            rows.add("lock_released", ended, qg, ["{}"], owner=before)
        else:
            lost: dict[str, Any] = {"error": "lock expired before renewal"}
            if h.reason == "lock_renew_failed":
                lost = {"new_token": h.token}
            rows.add(h.reason, ended, qg, [json.dumps(lost)], owner=before)
        if h.fenced:
            at = ended + rng.integers(100, 1500)
            offset = int(plan.committed_at(qg, at)[0])
            detail = {"offset": offset, "current_token": h.token, "outcome": "fenced"}
            rows.add(
                "fencing_rejected", at, qg, [json.dumps(detail)], owner=before, offset=[offset]
            )
        rows.add("lock_acquired", np.array([h.ms]), qg, ["{}"], owner=([h.owner], [h.token]))


def _episode(rows: EventRows, rng: np.random.Generator, e: Episode) -> None:
    """A planted episode's retries, then its dead letter, park, replay or discard."""
    plan = rows.plan
    qg = np.full(len(e.retry_ms), e.qg)
    key_level = e.level == "key"
    room = int(plan.max_offset[e.qg, e.first] - e.offset)
    batch = 1 if key_level else int(min(room, rng.choice(BATCH_SIZES, p=BATCH_P)))
    error = ERROR_TEXTS[e.error]
    times = list(range(1, len(e.retry_ms) + 1))
    details = [
        json.dumps(
            {
                "offsets": list(range(e.offset, e.offset + batch)),
                "reconsume_times": r,
                "max_reconsume_times": MAX_RECONSUME_TIMES,
                **({"waiting_behind": r // 2} if key_level else {"suspend_ms": 1000}),
                "error": error,
            }
        )
        for r in times
    ]
    rows.add(
        "consume_failed",
        e.retry_ms,
        qg,
        details,
        key=[e.key] * len(qg),
        offset=[e.offset] * len(qg),
        error=[e.error] * len(qg),
        n=[batch] * len(qg),
        reconsume_times=times,
    )
    if e.dead_letter_ms is None:
        return
    one = np.array([e.qg])
    dlq_id = f"{e.dead_letter_ms}-0"
    letter = {
        "offset": e.offset,
        "reconsume_times": len(times),
        "error": error,
        "dlq_id": dlq_id,
        "committed": e.offset + 1,
    }
    about: dict[str, Any] = {"key": [e.key], "offset": [e.offset], "dlq_id": [dlq_id]}
    rows.add(
        "dead_lettered",
        np.array([e.dead_letter_ms]),
        one,
        [json.dumps(letter)],
        reconsume_times=[len(times)],
        error=[e.error],
        **about,
    )
    if e.held_from is not None:
        park = {"key": KEY_NAMES[e.key].as_py(), "offset": e.offset, "dlq_id": dlq_id}
        rows.add(
            "key_parked", np.array([e.dead_letter_ms + 1]), one, [json.dumps(park)], n=[1], **about
        )
    if e.settled_ms is not None:
        kind = "dead_letter_replayed" if e.outcome == "replayed" else "dead_letter_discarded"
        _settle(rows, kind, np.array([e.settled_ms]), one, [e.key], [e.offset], [dlq_id])


def _settle(
    rows: EventRows,
    kind: str,
    ms: Ints,
    qg: Ints,
    keys: list[int],
    offsets: list[int],
    dlq_ids: list[str],
) -> None:
    """An operator's replay or discard of dead letters (no consumer, no token)."""
    actors = [OPERATORS[i % len(OPERATORS)] for i in range(len(ms))]
    details = [
        json.dumps({"dlq_id": d, "offset": o, "actor": a})
        for d, o, a in zip(dlq_ids, offsets, actors, strict=True)
    ]
    nobody = ([""] * len(ms), [None] * len(ms))
    rows.add(kind, ms, qg, details, owner=nobody, key=keys, offset=offsets, dlq_id=dlq_ids)


def _random_heads(
    rows: EventRows, rng: np.random.Generator, count: int, weight_power: float
) -> tuple[Ints, Ints, Ints, Ints]:
    """``count`` (qg, ms, head offset, key) at random times outside the planted
    episodes, queue groups weighted by their messages to the power ``weight_power``."""
    plan = rows.plan
    traffic = plan.cum[plan.topo.qg_cell, -1].astype(np.float64) ** weight_power
    qg = np.empty(0, dtype=np.int64)
    ms = np.empty(0, dtype=np.int64)
    while len(qg) < count:
        more = rng.choice(plan.topo.qgs, 2 * count + 8, p=traffic / traffic.sum())
        at = plan.day0 + rng.integers(0, DAY_MS - SECOND, len(more))
        keep = ~plan.in_episode(more, at, plan.sizes.interval_ms)
        qg, ms = np.concatenate([qg, more[keep]]), np.concatenate([ms, at[keep]])
    qg, ms = qg[:count], ms[:count]
    head = plan.committed_at(qg, ms)
    return qg, ms, head, plan.keys.keys_of(plan.topo.qg_cell[qg], head)


def _margin_overruns(rows: EventRows, rng: np.random.Generator, count: int) -> None:
    """Handlers that ran past the lock's safety margin: mostly on the busiest queues."""
    qg, ms, head, key = _random_heads(rows, rng, count, 2.0)
    span = rng.choice(BATCH_SIZES, count, p=BATCH_P)
    seconds = np.round(rng.uniform(26.0, 90.0, count), 3)
    details = [
        json.dumps(
            {
                "offsets": [int(o), int(o + s - 1)],
                "handler_seconds": float(h),
                "client_lock_expiry": 25.0,
            }
        )
        for o, s, h in zip(head, span, seconds, strict=True)
    ]
    rows.add("lock_margin_overrun", ms, qg, details, key=key, offset=head, n=span)


def _dead_letters(rows: EventRows, rng: np.random.Generator, count: int) -> None:
    """Messages that exhausted their retries, and operators replaying or discarding some
    of them later in the day."""
    plan = rows.plan
    qg, ms, head, key = _random_heads(rows, rng, count, 1.0)
    error = rng.choice(len(ERROR_P), count, p=ERROR_P)
    dlq_ids = [f"{m}-0" for m in ms]
    details = [
        json.dumps(
            {
                "offset": int(o),
                "reconsume_times": MAX_RECONSUME_TIMES,
                "error": ERROR_TEXTS[x],
                "dlq_id": d,
                "committed": int(o + 1),
            }
        )
        for o, x, d in zip(head, error, dlq_ids, strict=True)
    ]
    rows.add(
        "dead_lettered",
        ms,
        qg,
        details,
        key=key,
        offset=head,
        reconsume_times=np.full(count, MAX_RECONSUME_TIMES),
        error=error,
        dlq_id=dlq_ids,
    )
    fate = rng.random(count)
    later = ms + rng.integers(5 * MINUTE, 3 * HOUR, count)
    in_day = later < plan.day0 + DAY_MS
    for kind, chosen in (
        ("dead_letter_replayed", (fate < REPLAYED) & in_day),
        ("dead_letter_discarded", (fate >= REPLAYED) & (fate < REPLAYED + DISCARDED) & in_day),
    ):
        picked = np.flatnonzero(chosen)
        _settle(
            rows,
            kind,
            later[picked],
            qg[picked],
            key[picked].tolist(),
            head[picked].tolist(),
            [dlq_ids[i] for i in picked],
        )


def _commits(rows: EventRows, rng: np.random.Generator, count: int) -> None:
    """``offset_committed`` rows: at random instants of each queue group (a commit
    interval's coalesced commits) where its committed offset moved, ``count`` of them
    (fewer when the offsets do not move that often)."""
    plan = rows.plan
    per_group = math.ceil(1.5 * count / plan.topo.qgs) + 4
    qg = np.repeat(np.arange(plan.topo.qgs), per_group)
    ms = np.sort(plan.day0 + rng.integers(0, DAY_MS, len(qg)).reshape(-1, per_group)).ravel()
    value = plan.committed_at(qg, ms)
    moved = np.flatnonzero(value > _previous(qg, value, plan.committed[qg, 0]))
    if len(moved) > count:
        moved = np.sort(rng.choice(moved, count, replace=False))
    qg, ms, to = qg[moved], ms[moved], value[moved]
    start = _previous(qg, to, plan.committed[qg, 0])
    commits = np.clip(1 + rng.poisson((to - start) / 8.0), 1, to - start)
    text = [pc.cast(pa.array(x), pa.string()) for x in (start, to, commits)]
    details = pc.binary_join_element_wise(
        '{"from_offset":', text[0], ',"offset":', text[1], ',"commits":', text[2], "}", ""
    )
    rows.add("offset_committed", ms, qg, details, offset=start, offset_to=to, n=commits)


def _previous(qg: Ints, value: Ints, first: Ints) -> Ints:
    """Each row's previous ``value`` within its queue group (rows grouped by ``qg`` in
    time order), ``first`` for a group's first row."""
    out = np.roll(value, 1)
    starts = np.concatenate([[True], qg[1:] != qg[:-1]])
    out[starts] = first[starts]
    return out


def _retries(rows: EventRows, rng: np.random.Generator, count: int) -> None:
    """Transient failures: a batch (one message under key ordering) retried a few times
    and then handled."""
    plan = rows.plan
    qg, ms, head, key = _random_heads(rows, rng, count, 1.0)
    key_ordered = plan.topo.qg_key_ordered[qg]
    following = np.minimum((ms - plan.day0) // plan.sizes.interval_ms + 1, len(plan.sample_ms) - 1)
    room = np.maximum(plan.max_offset[qg, following] - head, 1)
    batch = np.where(key_ordered, 1, np.minimum(rng.choice(BATCH_SIZES, count, p=BATCH_P), room))
    times = np.minimum(rng.geometric(0.55, count), MAX_RECONSUME_TIMES)
    error = rng.choice(len(ERROR_P), count, p=ERROR_P)
    details = [
        json.dumps(
            {
                "offsets": list(range(o, o + b)),
                "reconsume_times": r,
                "max_reconsume_times": MAX_RECONSUME_TIMES,
                "error": ERROR_TEXTS[x],
            }
        )
        for o, b, r, x in zip(
            head.tolist(), batch.tolist(), times.tolist(), error.tolist(), strict=True
        )
    ]
    rows.add(
        "consume_failed",
        ms,
        qg,
        details,
        key=key,
        offset=head,
        n=batch,
        reconsume_times=times,
        error=error,
    )
