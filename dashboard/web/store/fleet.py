"""The fleet state's writer (docs/fleet-state.md): reads the runtime's state from Redis and
keeps ``QueueStatus`` (one row per (topic, group, queue)), ``GroupStatus`` and
``TopicStatus`` up to date, so that pages page, sort and filter rows in the database and
never read every queue of the fleet for one request.

One ``FleetWriter`` runs in the ingester (it knows which queues its events named). A
*sweep* reads the whole fleet (production moves max offsets and time lag without events);
a *refresh* reads only the queues named, in a few pipelined round trips. Both write only
the rows whose values changed (one upsert), then the totals of the groups they touched.
While a writer is live it keeps ``WRITER_KEY`` set in Redis; without one, a page makes
the sweep itself before it reads (``fleet_read.ensure_fresh``), so a deployment without
an ingester still shows the truth, at the old cost.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import redis
from django.db import connection, transaction
from django.db.models import Count

from lockstep.dashboard.web.store import queries
from lockstep.dashboard.web.store.cards import CardCache
from lockstep.dashboard.web.store.models import (
    Event,
    FleetStamp,
    GroupStatus,
    QueueStatus,
    TopicStatus,
)
from lockstep.dashboard.web.store.stuck import Alert, heartbeats_of, stuck_queues
from lockstep.workers import events as ev
from lockstep.workers.errors import UnknownTopicError
from lockstep.workers.inspect import (
    GroupState,
    HeldKey,
    Overview,
    TopicLag,
    TopicState,
    dead_letter_counts,
    held_keys,
    list_topics,
    redis_now_ms,
)
from lockstep.workers.inspect.consumers import heartbeat_timeout
from lockstep.workers.inspect.lag import topic_lag
from lockstep.workers.inspect.state import join_cards
from lockstep.workers.refs import GroupQueue, QueueRef
from lockstep.workers.topics import Topic, get_topic, groups_of

# Set while a writer is live (it renews it with every write); pages that find it gone
# sweep themselves. Three missed sweeps of the slowest cadence let it lapse.
WRITER_KEY = "lockstep-web:fleet-writer"
WRITER_TTL_MS = 30_000
STAMP = "fleet"
# The runtime samples lag every 10 s (LOCKSTEP_LAG_SAMPLE_SECONDS): a run not told of a
# sample for two of those asks the stored samples again.
RUN_RECHECK_MS = 20_000
# A sweep reads at most this many (queue, group) pairs per step (``sweep_step``): about a
# tenth of a second of the writer's time on an idle machine, so a refresh of the queues
# events named never waits long behind a sweep of a large fleet.
SLICE_PAIRS = 1024
# Rates are "per second over the last minute", as the overview always showed them.
RATE_WINDOW_MS = 60_000
# Text fields are cut to these lengths: rows stay small, pages show the start.
ERROR_CHARS = 300
BLOCKED_KEYS_KEPT = 20
# States that need an operator's look even before anything is stuck.
ATTENTION_STATES = frozenset(
    {"unowned", "no_live_consumer", "blocked", "suspended", "paused", "lock_expired"}
)

PairKey = tuple[str, str, int]
Row = dict[str, Any]
# QueueStatus fields a reading sets (all but the key and ``updated_ms``).
ROW_FIELDS = (
    "max_offset",
    "committed_offset",
    "lag",
    "parked",
    "held_keys",
    "time_lag_s",
    "owner",
    "owner_live",
    "token",
    "lock_granted_at_ms",
    "lock_expires_at_ms",
    "completed_above",
    "in_flight",
    "state",
    "retries",
    "last_error",
    "blocked_count",
    "blocked_keys",
    "dead_letters",
    "stuck",
    "stuck_since_ms",
    "stuck_entries",
    "severity",
)
GROUP_FIELDS = (
    "queues",
    "owned",
    "owners",
    "lag",
    "parked",
    "max_time_lag_s",
    "out_per_s",
    "retries_per_min",
    "stuck",
    "held_keys",
    "blocked_keys",
    "dead_letters",
)


@dataclass
class Reading:
    """What one read of (part of) the fleet found: per topic its state (the queues read)
    and their rows; after the write, which rows changed."""

    now_ms: int
    states: list[TopicState] = field(default_factory=list)
    rows: dict[PairKey, Row] = field(default_factory=dict)
    topics: dict[str, Topic] = field(default_factory=dict)
    changed: set[PairKey] = field(default_factory=set)  # rows written or deleted


Slice = tuple[tuple[str, list[int]], ...]


@dataclass
class _Sweep:
    """A sweep in progress: the topics it reads, the totals its steps found so far (for
    the rates), the time its steps took."""

    topics: dict[str, Topic]
    produced: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    handled: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    work_s: float = 0.0

    def note(self, reading: Reading) -> None:
        for state in reading.states:
            for q in state["queues"]:
                self.produced[state["name"]] += q["max_offset"]
                for g in q["groups"]:
                    self.handled[(state["name"], g["group"])] += q["max_offset"] - g["lag"]


def plan_slices(topics: dict[str, tuple[int, int]], pairs: int = SLICE_PAIRS) -> list[Slice]:
    """A sweep's steps: ``topics`` maps a topic to (its queues, its groups as last seen);
    every queue of every topic is in exactly one step, each step holds at most ``pairs``
    (queue, group) pairs (a queue is never split; a topic with more groups than
    ``pairs`` takes a queue a step), and small topics share a step."""
    out: list[Slice] = []
    part: list[tuple[str, list[int]]] = []
    room = pairs
    for name in sorted(topics):
        queues, groups = topics[name]
        start = 0
        while start < queues:
            take = min(queues - start, max(1, room // groups))
            if part and take * groups > room:
                out.append(tuple(part))
                part, room = [], pairs
                continue
            part.append((name, list(range(start, start + take))))
            room -= take * groups
            start += take
            if room <= 0:
                out.append(tuple(part))
                part, room = [], pairs
    if part or not out:
        out.append(tuple(part))
    return out


def _pairs_of(part: Slice) -> set[tuple[str, int]]:
    return {(name, q) for name, queues in part for q in queues}


@dataclass(frozen=True)
class _Run:
    """A queue's newest run of lag samples showing the same progress with lag > 0, as
    ``queries.not_moving_since`` reads it: ``progress`` (committed offset, messages done),
    ``None`` after a sample with nothing waiting; ``since_ms`` the run's first sample;
    ``seen_ms`` the newest sample (or database answer) it was told of."""

    progress: tuple[int, int] | None
    since_ms: int
    seen_ms: int


class FleetWriter:
    """Keeps the fleet state. Not thread-safe: one owner (the ingester's publisher)."""

    def __init__(self, client: redis.Redis, *, keeps_history: bool = True) -> None:
        """``keeps_history``: judge "not moving" from this writer's own readings (the
        ingester's long-lived writer); a page's one-off sweep asks the stored samples."""
        self.client = client
        self.keeps_history = keeps_history
        self._cards = CardCache(client)
        self._rows: dict[PairKey, Row] = {}
        self._loaded = False
        self._runs: dict[PairKey, _Run] = {}
        self._produced: dict[str, deque[tuple[int, int]]] = defaultdict(deque)
        self._handled: dict[tuple[str, str], deque[tuple[int, int]]] = defaultdict(deque)
        self._retries: dict[tuple[str, str], int] = {}
        self._topics: dict[str, Topic] = {}
        self._plan: deque[Slice] | None = None
        self._sweep = _Sweep({})
        self.last_sweep_s = 0.0
        self.swept_at = 0.0

    # ---- the two ways in -------------------------------------------------------------

    def sweep(self, *, mark_live: bool = True) -> Reading:
        """Read every topic, write what changed, drop rows of what is gone: a whole sweep
        in one call (its steps run back to back; a sweep already begun starts over).
        ``mark_live``: renew ``WRITER_KEY`` (the ingester's writer; a page sweeping for a
        missing one does not)."""
        self._plan = None
        whole = Reading(0)
        done = False
        while not done:
            step, done = self.sweep_step(mark_live=mark_live)
            whole.now_ms = step.now_ms
            whole.states += step.states
            whole.rows |= step.rows
            whole.topics |= step.topics
            whole.changed |= step.changed
        return whole

    def sweep_step(self, *, mark_live: bool = True) -> tuple[Reading, bool]:
        """Read and write the next slice of the sweep in progress (at most
        ``SLICE_PAIRS`` (queue, group) pairs, a new sweep planned when none is): a sweep of
        a large fleet is many steps, and the queues events named are refreshed between
        them instead of waiting seconds behind one long read. Returns the slice's reading
        and whether the sweep is now complete: then the rows of topics and queues no
        longer there are deleted, the rates noted and the sweep stamped."""
        started = time.monotonic()
        if not self._plan:
            self._begin_sweep()
        assert self._plan is not None
        part = self._plan.popleft()
        topics = {name: self._sweep.topics[name] for name, _ in part}
        reading = self._read(dict(part), topics)
        self._load()
        self._sweep.note(reading)
        self._write(reading, read=_pairs_of(part))
        done = not self._plan
        self._sweep.work_s += time.monotonic() - started
        if done:
            self._end_sweep(reading)
        self._stamp(reading.now_ms, swept=done, mark_live=mark_live)
        return reading, done

    @property
    def sweeping(self) -> bool:
        """A sweep is begun and not complete."""
        return bool(self._plan)

    def _begin_sweep(self) -> None:
        """Plan a sweep's steps by the topics' queues and groups (registered, or seen in
        the rows when more: a step's size is a guess made before its read)."""
        topics = {t.name: t for t in list_topics(self.client)}
        seen: dict[str, set[str]] = defaultdict(set)
        for topic, group, _ in self._rows:
            seen[topic].add(group)
        sizes = {
            name: (t.queues, max(len(groups_of(self.client, name)), len(seen[name]), 1))
            for name, t in topics.items()
        }
        self._sweep = _Sweep(topics)
        self._plan = deque(plan_slices(sizes))
        self._retries = _retries_per_group(redis_now_ms(self.client))

    def _end_sweep(self, last: Reading) -> None:
        """The whole fleet was read: rows of topics or queues no longer there go, the
        rates take the sweep's totals, every group's and topic's totals are written."""
        topics = self._sweep.topics
        gone = {k for k in self._rows if k[0] not in topics or k[2] >= topics[k[0]].queues}
        for name, total in self._sweep.produced.items():
            _keep(self._produced[name], last.now_ms, total)
        for pair, total in self._sweep.handled.items():
            _keep(self._handled[pair], last.now_ms, total)
        with transaction.atomic():
            _delete(gone)
            for key in gone:
                self._rows.pop(key, None)
            self._write_topics(topics, self._sweep.produced, last.now_ms)
            self._write_groups(
                {(k[0], k[1]) for k in self._rows} | {(k[0], k[1]) for k in gone}, last.now_ms
            )
        last.changed |= gone
        self._topics = dict(topics)
        self.last_sweep_s = self._sweep.work_s
        self.swept_at = time.monotonic()

    def refresh(self, refs: Iterable[QueueRef]) -> Reading:
        """Read only the queues of ``refs`` (every group of each), write what changed."""
        wanted: dict[str, list[int]] = defaultdict(list)
        for ref in refs:
            wanted[ref.topic].append(ref.queue)
        topics: dict[str, Topic] = {}
        for name in wanted:
            topic = self._topics.get(name) or _topic_or_none(self.client, name)
            if topic is not None:
                topics[name] = topic
        reading = self._read({n: wanted[n] for n in topics}, topics)
        self._write(reading)
        self._stamp(reading.now_ms, swept=False, mark_live=True)
        return reading

    def stop(self) -> None:
        """Say this writer is gone: pages sweep for themselves from now on."""
        self.client.delete(WRITER_KEY)

    def sweep_due(self, min_interval_s: float) -> bool:
        """A step of a sweep is due while one is in progress; a new sweep
        ``min_interval_s`` after the last one ended, or four times as long as its steps
        took (sweeping a large fleet never takes more than a fifth of the writer's
        time)."""
        if self.sweeping:
            return True
        wait = max(min_interval_s, 4 * self.last_sweep_s)
        return time.monotonic() - self.swept_at >= wait

    # ---- reading ---------------------------------------------------------------------

    def _read(self, wanted: dict[str, list[int] | None], topics: dict[str, Topic]) -> Reading:
        now_ms = redis_now_ms(self.client)
        reading = Reading(now_ms, topics=topics)
        lags = [topic_lag(self.client, topics[n], now_ms, wanted[n]) for n in wanted]
        owners = {g["owner"] for t in lags for q in t["queues"] for g in q["groups"] if g["owner"]}
        registered = self._cards.registered(owners, now_ms)
        beats = heartbeats_of(registered)
        timeout_ms = heartbeat_timeout() * 1000
        live = [c for c in registered if now_ms - c["heartbeat_at_ms"] <= timeout_ms]
        live_ids = {c["id"] for c in live}
        cards = self._cards.snapshots(lags, live_ids)
        snapshot: Overview = {"generated_at_ms": now_ms, "topics": lags}
        holds = self._holds(lags)
        stuck = stuck_queues(
            snapshot, cards, now_ms, heartbeats=beats, holds=holds, not_moving=self._not_moving
        )
        by_pair: dict[PairKey, list[Alert]] = defaultdict(list)
        for entry in stuck:
            by_pair[(entry["topic"], entry["group"], entry["queue"])].append(entry)
        dead = dead_letter_counts(
            self.client,
            [
                GroupQueue(QueueRef(t["name"], q["queue"]), g["group"])
                for t in lags
                for q in t["queues"]
                for g in q["groups"]
            ],
        )
        for lag in lags:
            state = join_cards(lag, cards, live_ids, now_ms)
            reading.states.append(state)
            for q in state["queues"]:
                for g in q["groups"]:
                    key = (lag["name"], g["group"], q["queue"])
                    cell = GroupQueue(QueueRef(lag["name"], q["queue"]), g["group"])
                    reading.rows[key] = queue_row(
                        g, q["max_offset"], dead.get(cell, 0), by_pair.get(key, []), now_ms
                    )
        return reading

    def _holds(self, lags: list[TopicLag]) -> dict[tuple[str, str], list[HeldKey]]:
        wanted: dict[tuple[str, str], set[int]] = defaultdict(set)
        for t in lags:
            for q in t["queues"]:
                for g in q["groups"]:
                    if g["parked_keys"]:
                        wanted[(t["name"], g["group"])].add(q["queue"])
        return {
            (topic, group): held_keys(self.client, topic, group, queues)
            for (topic, group), queues in sorted(wanted.items())
        }

    def note_sample(self, key: PairKey, ts_ms: int, details: dict[str, Any]) -> None:
        """Follow a stored ``lag_sampled`` event of ``key`` (in stream order): the run of
        no progress it extends, starts or breaks."""
        try:
            lag = int(details.get("lag", 0))
            progress = (int(details["committed_offset"]), int(details["max_offset"]) - lag)
        except (KeyError, TypeError, ValueError):
            return  # a sample written by hand without the fields: it tells nothing
        run = self._runs.get(key)
        if lag <= 0:
            self._runs[key] = _Run(None, ts_ms, ts_ms)
        elif run is not None and run.progress == progress:
            self._runs[key] = _Run(run.progress, run.since_ms, ts_ms)  # (a tick: 1,000s)
        else:
            self._runs[key] = _Run(progress, ts_ms, ts_ms)

    def _not_moving(
        self, topic: str, group: str, queue: int, committed: int, now_ms: int, done: int | None
    ) -> int | None:
        """``queries.not_moving_since``, answered from the samples this writer was told
        of (``note_sample``) once it knows the queue's run. The database is asked when it
        does not (the queue's first wait since the writer started), when the run it knows
        shows other progress and no sample came for ``RUN_RECHECK_MS`` (samples this
        writer does not see: another ingester's streams), and always by a writer that
        keeps no history (a page's sweep)."""
        key = (topic, group, queue)
        progress = (committed, done or 0)
        run = self._runs.get(key) if self.keeps_history else None
        if run is not None and (run.progress == progress or now_ms - run.seen_ms < RUN_RECHECK_MS):
            return run.since_ms if run.progress == progress else None
        since = queries.not_moving_since(topic, group, queue, committed, now_ms, done=done)
        if self.keeps_history:
            self._runs[key] = _Run(progress if since is not None else None, since or 0, now_ms)
        return since

    # ---- writing ---------------------------------------------------------------------

    def _write(self, reading: Reading, *, read: set[tuple[str, int]] | None = None) -> None:
        """Write the rows of ``reading`` that changed, and delete the rows of the queues
        it read that it no longer found (a group gone): ``read`` names those queues as
        (topic, queue), by default every queue ``reading`` has a row of."""
        self._load()
        changed = {k: r for k, r in reading.rows.items() if self._rows.get(k) != r}
        read_queues = read if read is not None else {(k[0], k[2]) for k in reading.rows}
        gone = {k for k in self._rows if (k[0], k[2]) in read_queues} - set(reading.rows)
        reading.changed = set(changed) | gone
        with transaction.atomic():
            _upsert(changed, reading.now_ms)
            _delete(gone)
            for key in gone:
                self._rows.pop(key, None)
            self._rows.update(changed)
            self._write_groups({(k[0], k[1]) for k in reading.changed}, reading.now_ms)
        self._topics.update(reading.topics)

    def _load(self) -> None:
        """The rows stored before this writer started: compared against, and deleted by
        the first sweep when gone."""
        if self._loaded:
            return
        for row in QueueStatus.objects.values("topic", "group", "queue", *ROW_FIELDS):
            key = (row.pop("topic"), row.pop("group"), row.pop("queue"))
            self._rows[key] = row
        # The previous writer's last totals start the rates, when recent enough to be
        # inside the window.
        now_ms = redis_now_ms(self.client)
        for t in TopicStatus.objects.filter(updated_ms__gte=now_ms - RATE_WINDOW_MS):
            self._produced[t.name].append((t.updated_ms, t.produced))
        for g in GroupStatus.objects.filter(updated_ms__gte=now_ms - RATE_WINDOW_MS):
            self._handled[(g.topic, g.group)].append((g.updated_ms, g.handled))
        self._loaded = True

    def _write_groups(self, touched: set[tuple[str, str]], now_ms: int) -> None:
        rows_of: dict[tuple[str, str], list[Row]] = defaultdict(list)
        for (topic, group, _), row in self._rows.items():
            if (topic, group) in touched:
                rows_of[(topic, group)].append(row)
        totals = [
            GroupStatus(
                topic=t,
                group=g,
                updated_ms=now_ms,
                handled=sum(r["max_offset"] - r["lag"] for r in rows),
                **self._group_totals((t, g), rows),
            )
            for (t, g), rows in rows_of.items()
        ]
        GroupStatus.objects.bulk_create(
            totals,
            update_conflicts=True,
            unique_fields=("topic", "group"),
            update_fields=(*GROUP_FIELDS, "handled", "updated_ms"),
            batch_size=500,
        )
        empty = touched - set(rows_of)
        for topic, group in empty:
            GroupStatus.objects.filter(topic=topic, group=group).delete()

    def _group_totals(self, pair: tuple[str, str], rows: list[Row]) -> dict[str, Any]:
        owners = {r["owner"] for r in rows if r["owner"] and r["owner_live"]}
        return {
            "queues": len(rows),
            "owned": sum(1 for r in rows if r["owner"] and r["owner_live"]),
            "owners": len(owners),
            "lag": sum(r["lag"] for r in rows),
            "parked": sum(r["parked"] for r in rows),
            "max_time_lag_s": max((r["time_lag_s"] for r in rows), default=0.0),
            "out_per_s": _rate(self._handled.get(pair)),
            "retries_per_min": self._retries.get(pair, 0),
            "stuck": sum(len(r["stuck_entries"]) for r in rows),
            "held_keys": sum(r["held_keys"] for r in rows),
            "blocked_keys": sum(r["blocked_count"] for r in rows),
            "dead_letters": sum(r["dead_letters"] for r in rows),
        }

    def _write_topics(
        self, topics: dict[str, Topic], produced: dict[str, int], now_ms: int
    ) -> None:
        groups: dict[str, set[str]] = defaultdict(set)
        for topic_name, group, _ in self._rows:
            groups[topic_name].add(group)
        for name, topic in topics.items():
            TopicStatus.objects.update_or_create(
                name=name,
                defaults={
                    "queue_count": topic.queues,
                    "groups": len(groups.get(name, ())),
                    "in_per_s": _rate(self._produced.get(name)),
                    "produced": produced.get(name, 0),
                    "updated_ms": now_ms,
                },
            )
        TopicStatus.objects.exclude(name__in=list(topics)).delete()

    def _stamp(self, now_ms: int, *, swept: bool, mark_live: bool) -> None:
        values: dict[str, Any] = {"refreshed_ms": now_ms}
        if swept:
            values |= {"swept_ms": now_ms, "sweep_duration_ms": int(self.last_sweep_s * 1000)}
        FleetStamp.objects.update_or_create(name=STAMP, defaults=values)
        if mark_live:
            self.client.set(WRITER_KEY, str(now_ms), px=WRITER_TTL_MS)


# ---- rows ------------------------------------------------------------------------------


def queue_row(
    g: GroupState, max_offset: int, dead_letters: int, stuck: list[Alert], now_ms: int
) -> Row:
    """The ``QueueStatus`` values of one (queue, group) read at ``now_ms``: ``g``
    (``workers.inspect``'s ``group_state``), its dead letters and its stuck entries
    (``stuck_queues``). Times are absolute, so a row changes when the queue does, not
    with the clock (time lag excepted)."""
    expires_in = g["lock_expires_in_ms"]
    first = min(stuck, key=lambda a: a["since_ms"]) if stuck else None
    state = g["state"]
    blocked = list(g.get("blocked_keys", []))[:BLOCKED_KEYS_KEPT]
    held = g["parked_keys"]
    attention = state in ATTENTION_STATES or held > 0 or bool(blocked) or dead_letters > 0
    return {
        "max_offset": max_offset,
        "committed_offset": g["committed_offset"],
        "lag": g["lag"],
        "parked": g["parked"],
        "held_keys": held,
        "time_lag_s": float(g["time_lag_s"]),
        "owner": g["owner"] or "",
        "owner_live": g["owner"] is not None and state != "no_live_consumer",
        "token": g["token"],
        "lock_granted_at_ms": g["lock_granted_at_ms"],
        "lock_expires_at_ms": now_ms + expires_in if expires_in is not None else None,
        "completed_above": g["completed_above"],
        "in_flight": g.get("in_flight"),
        "state": state,
        "retries": g["retries"],
        "last_error": g["last_error"][:ERROR_CHARS],
        "blocked_count": int(g.get("blocked_count", len(blocked))),
        "blocked_keys": [dict(b) for b in blocked],
        "dead_letters": dead_letters,
        "stuck": first["reason"] if first else "",
        "stuck_since_ms": first["since_ms"] if first else None,
        "stuck_entries": sorted(stuck, key=lambda a: (a["since_ms"], a["reason"])),
        "severity": 2 if first else 1 if attention else 0,
    }


def _upsert(changed: dict[PairKey, Row], now_ms: int) -> None:
    """Insert or update the ``changed`` rows in one ``executemany`` of ``INSERT … ON
    CONFLICT DO UPDATE`` (SQLite and PostgreSQL alike): the ORM's ``bulk_create`` builds
    each value in Python and spent most of a sweep doing it at a thousand rows."""
    if not changed:
        return
    columns = ("topic", "group", "queue", *ROW_FIELDS, "updated_ms")
    json_fields = {"blocked_keys", "stuck_entries"}
    rows = [
        (
            topic,
            group,
            queue,
            *(json.dumps(row[f]) if f in json_fields else row[f] for f in ROW_FIELDS),
            now_ms,
        )
        for (topic, group, queue), row in changed.items()
    ]
    with connection.cursor() as cursor:
        cursor.executemany(_upsert_sql(columns), rows)


def _upsert_sql(columns: tuple[str, ...]) -> str:
    quote = connection.ops.quote_name
    names = ", ".join(quote(c) for c in columns)
    updates = ", ".join(f"{quote(c)} = excluded.{quote(c)}" for c in columns[3:])
    return (
        f"INSERT INTO {quote(QueueStatus._meta.db_table)} ({names}) "
        f"VALUES ({', '.join(['%s'] * len(columns))}) "
        f"ON CONFLICT ({quote('topic')}, {quote('group')}, {quote('queue')}) "
        f"DO UPDATE SET {updates}"
    )


def _delete(gone: set[PairKey]) -> None:
    by_group: dict[tuple[str, str], list[int]] = defaultdict(list)
    for topic, group, queue in gone:
        by_group[(topic, group)].append(queue)
    for (topic, group), queues in by_group.items():
        QueueStatus.objects.filter(topic=topic, group=group, queue__in=queues).delete()


def _keep(points: deque[tuple[int, int]], now_ms: int, total: int) -> None:
    points.append((now_ms, total))
    while len(points) > 2 and now_ms - points[1][0] >= RATE_WINDOW_MS:
        points.popleft()


def _rate(points: deque[tuple[int, int]] | None) -> float | None:
    """Per second between the oldest and newest reading kept; ``None`` before there are
    two a second apart."""
    if not points or len(points) < 2:
        return None
    (t0, v0), (t1, v1) = points[0], points[-1]
    if t1 - t0 < 1000:
        return None
    return round(max(0, v1 - v0) * 1000 / (t1 - t0), 3)


def _retries_per_group(now_ms: int) -> dict[tuple[str, str], int]:
    """``consume_failed`` events per (topic, group) over the rate window, as retries per
    minute."""
    rows = (
        Event.objects.filter(type=ev.CONSUME_FAILED, ts__gte=queries.at(now_ms - RATE_WINDOW_MS))
        .values_list("topic", "group")
        .annotate(n=Count("id"))
    )
    return {(t, g): round(n * 60_000 / RATE_WINDOW_MS) for t, g, n in rows}


def _topic_or_none(client: redis.Redis, name: str) -> Topic | None:
    try:
        return get_topic(client, name)
    except UnknownTopicError:
        return None
