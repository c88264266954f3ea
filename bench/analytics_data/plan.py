"""The plan of one synthetic day, before any row exists: how many messages each queue
gets in every 10 s, the sample instants, each (queue, group)'s committed offset at every
sample, the stuck episodes planted in it, and who owned each queue when.

Everything the three data sets must agree on is decided here, so the messages, the
events and the samples are generated independently (and the messages in chunks) and
still tell one story: a commit event moves the offset the samples show, a stuck queue's
head key is the key of the message at its committed offset, a retry names that offset.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime

import numpy as np
from numpy.typing import NDArray

from bench.analytics_data.topology import (
    CONSUMERS,
    ERROR_P,
    GROUP_NAMES,
    QUEUE_RATE_SIGMA,
    SKEW_FACTOR,
    SKEWED,
    TOPICS,
    Floats,
    Ints,
    KeyIndex,
    Topology,
    consumer_name,
    key_index,
    topology,
)

DAY_MS = 86_400_000
BIN_MS = 10_000  # messages are planned per 10 s, the shortest sampling interval
BINS = DAY_MS // BIN_MS
SECOND = 1000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

EVENT_SHARE = 0.10
SAMPLE_SHARE = 0.02  # the sampling interval follows from it (at least 10 s)
MIN_ROWS = 20_000  # below this the fixed events (deploys, episodes) outgrow their share

# Traffic peaks in the afternoon and is lowest at night (rate 1 ± DIURNAL_AMPLITUDE).
PEAK_HOUR = 14.0
DIURNAL_AMPLITUDE = 0.55
# Consumers keep up: the baseline lag is what arrived during a short processing delay.
LATENCY_S = (0.2, 3.0)
# A backlog wave now and then: lag ramps up to this many seconds of traffic and drains.
WAVES_PER_QUEUE_GROUP = 1.0
WAVE_PEAK_S = (120.0, 1500.0)
# The skewed queue falls behind every afternoon (the hot keys' traffic peaks then).
SKEWED_WAVE = (15 * HOUR, 4 * HOUR, 2400.0)  # middle, half width, peak lag in seconds

# Episodes last from 90 s (over the default 60 s threshold) to 15 min at 10 s sampling;
# never less than two samples. Held keys stay held up to three times as long.
EPISODE_S = (90.0, 900.0)
QUEUE_EPISODES = ("succeeded", "dead_lettered", "replayed", "discarded") * 3
# Key-ordered group: (outcome, held after its dead letter). One stays open at midnight.
KEY_EPISODES = (
    ("succeeded", False),
    ("succeeded", False),
    ("dead_lettered", False),
    ("replayed", True),
    ("discarded", True),
    ("open", False),
)
RETRY_FIRST_MS = SECOND
RETRY_CAP_MS = 30 * SECOND
MAX_RETRIES_PER_EPISODE = 24  # the backoff cap grows on long episodes to stay under it

DEPLOY_HOURS = (2.25, 10.67, 17.08)  # every group restarts its consumers three times a day
LOCK_LOSS_SHARE = 0.0005  # of the events: lost locks and failed renewals


@dataclass(frozen=True)
class Sizes:
    messages: int
    events: int
    samples: int
    step: int  # BIN_MS units between samples

    @property
    def interval_ms(self) -> int:
        return self.step * BIN_MS


def sizes(rows: int, queue_groups: int) -> Sizes:
    """Split ``rows`` into messages, events (``EVENT_SHARE``) and samples (about
    ``SAMPLE_SHARE``, as a whole number of samples per queue group and day)."""
    per_queue_group = max(2, round(rows * SAMPLE_SHARE) // queue_groups)
    step = max(1, round(BINS / per_queue_group))
    samples = queue_groups * math.ceil(BINS / step)
    events = round(rows * EVENT_SHARE)
    return Sizes(rows - samples - events, events, samples, step)


@dataclass(frozen=True)
class Episode:
    """A planted stuck episode: samples ``first``..``last`` show it (the queue's
    committed offset frozen at ``offset``; for a key, listed in ``blocked_keys``)."""

    qg: int
    level: str  # "queue" or "key"
    first: int
    last: int
    held_from: int | None  # key level: the first sample in which the key is held
    offset: int
    key: int
    since_ms: int
    retry_ms: Ints  # its consume_failed events
    error: int  # index into ERRORS
    outcome: str  # succeeded, dead_lettered, replayed, discarded, open
    dead_letter_ms: int | None
    settled_ms: int | None  # replayed or discarded


@dataclass(frozen=True)
class Handoff:
    """A queue's lock changing hands: a deploy, or a lock lost or not renewed."""

    qg: int
    ended_ms: int  # the previous owner released (deploy) or lost its lock
    ms: int  # lock_acquired by ``owner``
    owner: str
    token: int
    reason: str  # deploy, lock_lost, lock_renew_failed
    previous: str
    previous_token: int
    fenced: bool  # the previous owner's next write was refused


@dataclass(frozen=True)
class Plan:
    day: date
    day0: int  # the day's midnight, epoch ms
    sizes: Sizes
    topo: Topology
    keys: KeyIndex
    start: Ints  # per cell: the first offset of the day
    counts: Ints  # [cell, bin]: messages produced in each 10 s
    cum: Ints  # [cell, bin]: messages produced before each bin (BINS + 1 columns)
    sample_ms: Ints  # [sample]
    max_offset: Ints  # [qg, sample]
    committed: Ints  # [qg, sample]
    parked: Ints  # [qg, sample]: messages parked behind a held key
    retries: Ints  # [qg, sample]: the head's retries
    time_lag_s: Floats  # [qg, sample]
    episodes: tuple[Episode, ...]
    handoffs: tuple[Handoff, ...]
    deploys: tuple[tuple[str, int, int], ...]  # (group, ms, generation)
    owner_keys: Ints  # qg * 2**45 + ms of every ownership change, sorted
    owner_names: tuple[str, ...]
    owner_index: Ints  # into owner_names, per owner_keys entry
    owner_tokens: Ints

    def owners_at(self, qg: Ints, ms: Ints) -> tuple[Ints, Ints]:
        """(index into ``owner_names``, fencing token) of each queue group's owner at ``ms``."""
        found = np.searchsorted(self.owner_keys, (qg << 45) + ms, side="right") - 1
        return self.owner_index[found], self.owner_tokens[found]

    def committed_at(self, qg: Ints, ms: Ints) -> Ints:
        """The committed offset at ``ms``: linear between samples, as the commit events
        between two samples move it."""
        since = ms - self.day0
        last = len(self.sample_ms) - 1
        s = np.minimum(since // self.sizes.interval_ms, last)
        nxt = np.minimum(s + 1, last)
        frac = np.clip((since - s * self.sizes.interval_ms) / self.sizes.interval_ms, 0.0, 1.0)
        low, high = self.committed[qg, s], self.committed[qg, nxt]
        return low + np.floor((high - low) * frac).astype(np.int64)

    def in_episode(self, qg: Ints, ms: Ints, margin_ms: int) -> NDArray[np.bool_]:
        """Whether ``ms`` falls within ``margin_ms`` of a planted episode of its ``qg``."""
        inside = np.zeros(len(qg), dtype=bool)
        for e in self.episodes:
            end = self.sample_ms[e.last] + self.sizes.interval_ms
            inside |= (qg == e.qg) & (ms >= e.since_ms - margin_ms) & (ms <= end + margin_ms)
        return inside


def day_start_ms(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


def make_plan(rows: int, day: date, seed: int) -> Plan:
    """The plan of ``rows`` rows for ``day``; the same arguments give the same plan."""
    if rows < MIN_ROWS:
        raise ValueError(f"at least {MIN_ROWS:,} rows are needed")
    rng = np.random.default_rng(seed)
    topo = topology()
    size = sizes(rows, topo.qgs)
    rates = _queue_rates(rng, topo)
    skewed = topo.cell_of(*SKEWED)
    hot_share = 1.0 - rates[skewed][1] / rates[skewed][0]
    keys = key_index(rng, topo, hot_share)
    counts = _message_counts(rng, rates[:, 0], size.messages)
    cum = np.zeros((topo.cells, BINS + 1), dtype=np.int64)
    cum[:, 1:] = np.cumsum(counts, axis=1)
    start = rng.integers(100_000, 5_000_000, topo.cells)
    day0 = day_start_ms(day)
    sample_bins = np.arange(0, BINS, size.step)
    sample_ms = day0 + sample_bins * BIN_MS
    cells = topo.qg_cell
    max_offset = start[cells][:, None] + cum[cells][:, sample_bins]
    rate_s = cum[cells, -1] / (DAY_MS / SECOND)
    committed = _committed_path(rng, topo, max_offset, start[cells], rate_s, size)
    state = _Planting(rng, topo, keys, size, sample_ms, max_offset, committed)
    episodes = state.plant()
    time_lag = _time_lag_s(cum, counts, start, cells, state.committed, max_offset, sample_ms)
    for e in episodes:
        if e.held_from is not None:  # the oldest parked message waits since the key failed
            held = slice(e.held_from, e.last + 1)
            waited = np.round((sample_ms[held] - e.since_ms) / 1000.0, 3)
            time_lag[e.qg, held] = np.maximum(time_lag[e.qg, held], waited)
    own = _Ownership(rng, topo, day0, size.events)
    owner_keys, owner_names, owner_index, owner_tokens = own.lookup()
    return Plan(
        day=day,
        day0=day0,
        sizes=size,
        topo=topo,
        keys=keys,
        start=start,
        counts=counts,
        cum=cum,
        sample_ms=sample_ms,
        max_offset=max_offset,
        committed=state.committed,
        parked=state.parked,
        retries=state.retries,
        time_lag_s=time_lag,
        episodes=episodes,
        handoffs=tuple(own.handoffs),
        deploys=tuple(own.deploys),
        owner_keys=owner_keys,
        owner_names=owner_names,
        owner_index=owner_index,
        owner_tokens=owner_tokens,
    )


def _queue_rates(rng: np.random.Generator, topo: Topology) -> Floats:
    """Per cell: (its share of all messages, the share without the hot keys). The skewed
    queue gets SKEW_FACTOR times its topic's mean."""
    rates = np.zeros((topo.cells, 2))
    for t, spec in enumerate(TOPICS):
        cells = np.flatnonzero(topo.cell_topic == t)
        noise = rng.lognormal(0.0, QUEUE_RATE_SIGMA, len(cells))
        rates[cells, 0] = rates[cells, 1] = noise
        if spec.name == SKEWED[0]:
            skewed = topo.cell_of(*SKEWED)
            others = rates[cells, 0].sum() - rates[skewed, 0]
            n = len(cells)
            rates[skewed, 0] = SKEW_FACTOR * others / (n - SKEW_FACTOR)
        rates[cells] *= spec.share / rates[cells, 0].sum()
    return rates


def _message_counts(rng: np.random.Generator, rates: Floats, messages: int) -> Ints:
    hours = (np.arange(BINS) + 0.5) * BIN_MS / HOUR
    diurnal = 1.0 + DIURNAL_AMPLITUDE * np.sin(2 * np.pi * (hours - PEAK_HOUR + 6.0) / 24.0)
    p = np.outer(rates, diurnal)
    counts = rng.multinomial(messages, (p / p.sum()).ravel())
    return counts.reshape(p.shape).astype(np.int64)


def _committed_path(
    rng: np.random.Generator,
    topo: Topology,
    max_offset: Ints,
    start: Ints,
    rate_s: Floats,
    size: Sizes,
) -> Ints:
    """Per (qg, sample): max offset minus a small processing lag plus backlog waves.
    While behind, a consumer always gets at least one offset further by the next sample,
    so only the planted episodes leave a committed offset standing still."""
    groups, count = max_offset.shape
    produced = np.diff(max_offset, axis=1, prepend=max_offset[:, :1])
    latency = rng.uniform(*LATENCY_S, (groups, count))
    lag = np.minimum(rng.poisson(rate_s[:, None] * latency), produced)
    target = lag + _waves(rng, topo, rate_s, count, size.interval_ms)
    committed = np.empty_like(max_offset)
    committed[:, 0] = np.clip(max_offset[:, 0] - target[:, 0], start, max_offset[:, 0])
    for s in range(1, count):
        prev = committed[:, s - 1]
        floor = prev + (prev < max_offset[:, s - 1])
        committed[:, s] = np.clip(max_offset[:, s] - target[:, s], floor, max_offset[:, s])
    return committed


def _waves(
    rng: np.random.Generator, topo: Topology, rate_s: Floats, count: int, interval_ms: int
) -> Ints:
    waves = np.zeros((topo.qgs, count))
    at = np.arange(count)
    for qg in range(topo.qgs):
        for _ in range(rng.poisson(WAVES_PER_QUEUE_GROUP)):
            middle = rng.integers(0, count)
            half = rng.integers(3, max(4, count // 16))
            peak = rate_s[qg] * rng.uniform(*WAVE_PEAK_S)
            waves[qg] += peak * np.clip(1.0 - np.abs(at - middle) / half, 0.0, None)
    afternoon, width, peak_s = SKEWED_WAVE
    skewed = np.flatnonzero(topo.qg_cell == topo.cell_of(*SKEWED))
    shape = np.clip(1.0 - np.abs(at * interval_ms - afternoon) / width, 0.0, None)
    waves[skewed] += np.outer(rate_s[skewed] * peak_s, shape)
    return np.round(waves).astype(np.int64)


def _time_lag_s(
    cum: Ints,
    counts: Ints,
    start: Ints,
    cells: Ints,
    committed: Ints,
    max_offset: Ints,
    sample_ms: Ints,
) -> Floats:
    """Sample time minus the produce time of the message at the committed offset (the
    oldest unconsumed), placed within its 10 s as the message generator places it."""
    width = cum.shape[1]
    flat = (np.arange(cum.shape[0])[:, None] << 40) + cum
    rel = np.clip(committed - start[cells][:, None], 0, None)
    rel = np.minimum(rel, cum[cells, -1][:, None] - 1)
    found = np.searchsorted(flat.ravel(), (cells[:, None] << 40) + rel, side="right") - 1
    b = np.clip(found - cells[:, None] * width, 0, BINS - 1)
    in_bin = counts[cells[:, None], b]
    rank = rel - cum[cells[:, None], b]
    produced = sample_ms[0] + b * BIN_MS + (rank + 0.5) * BIN_MS / np.maximum(in_bin, 1)
    behind = committed < max_offset
    return np.where(behind, np.round(np.maximum(sample_ms - produced, 1.0) / 1000.0, 3), 0.0)


class _Planting:
    """Plants the stuck episodes into the committed paths."""

    def __init__(
        self,
        rng: np.random.Generator,
        topo: Topology,
        keys: KeyIndex,
        size: Sizes,
        sample_ms: Ints,
        max_offset: Ints,
        committed: Ints,
    ) -> None:
        self.rng, self.topo, self.keys, self.size = rng, topo, keys, size
        self.sample_ms, self.max_offset = sample_ms, max_offset
        self.committed = committed.copy()
        self.parked = np.zeros_like(committed)
        self.retries = np.zeros_like(committed)
        self.count = committed.shape[1]
        interval_s = size.interval_ms / SECOND
        self.min_len = 1 + math.ceil(EPISODE_S[0] / interval_s)
        self.max_len = max(self.min_len, 1 + math.ceil(EPISODE_S[1] / interval_s))

    def plant(self) -> tuple[Episode, ...]:
        """Every outcome of QUEUE_EPISODES in a queue-ordered group's queue, every one of
        KEY_EPISODES in the key-ordered group's; one episode per queue group at most."""
        out: list[Episode] = []
        for level, mask, kinds in (
            ("queue", ~self.topo.qg_key_ordered, [(o, False) for o in QUEUE_EPISODES]),
            ("key", self.topo.qg_key_ordered, list(KEY_EPISODES)),
        ):
            free = [int(qg) for qg in self.rng.permutation(np.flatnonzero(mask))]
            for outcome, held in kinds:
                for qg in list(free):
                    if (e := self._episode(qg, level, outcome, held)) is not None:
                        out.append(e)
                        free.remove(qg)
                        break
        return tuple(out)

    def _episode(self, qg: int, level: str, outcome: str, held: bool) -> Episode | None:
        blocked = int(self.rng.integers(self.min_len, self.max_len + 1))
        held_len = int(self.rng.integers(self.min_len, 3 * self.max_len + 1)) if held else 0
        if outcome == "open":  # shown until the day's last sample
            first = self._start(qg, self.count - self.max_len, self.count - self.min_len)
            blocked = self.count - first if first is not None else 0
        else:
            first = self._start(qg, 1, self.count - blocked - held_len - 1)
        if first is None:
            return None
        last = first + blocked + held_len - 1
        end_blocked = first + blocked - 1
        offset = min(int(self.committed[qg, first]), int(self.max_offset[qg, first]) - 1)
        interval = self.size.interval_ms
        since = int(self.sample_ms[first] - self.rng.integers(SECOND, interval - SECOND + 1))
        next_sample = self.sample_ms[end_blocked] + self.rng.integers(SECOND, interval)
        retry_end = int(min(next_sample, self.sample_ms[0] + DAY_MS - SECOND))
        retry_ms = _retry_times(since, retry_end)
        self.committed[qg, first : end_blocked + 1] = offset
        shown = self.sample_ms[first : end_blocked + 1]
        self.retries[qg, first : end_blocked + 1] = np.searchsorted(retry_ms, shown, "right")
        dead_letter = retry_end if outcome in ("dead_lettered", "replayed", "discarded") else None
        settled = None
        if held:
            self.retries[qg, end_blocked + 1 : last + 1] = len(retry_ms)
            grows = self.rng.poisson(0.3, held_len)
            self.parked[qg, end_blocked + 1 : last + 1] = 1 + np.cumsum(grows)
            settled = int(self.sample_ms[last] + self.rng.integers(SECOND, interval))
        elif outcome in ("replayed", "discarded") and dead_letter is not None:
            later = int(self.rng.integers(10 * MINUTE, 2 * HOUR))
            settled = min(dead_letter + later, int(self.sample_ms[0]) + DAY_MS - SECOND)
        cell = np.array([self.topo.qg_cell[qg]])
        return Episode(
            qg=qg,
            level=level,
            first=first,
            last=last,
            held_from=end_blocked + 1 if held else None,
            offset=offset,
            key=int(self.keys.keys_of(cell, np.array([offset]))[0]),
            since_ms=since,
            retry_ms=retry_ms,
            error=int(self.rng.choice(len(ERROR_P), p=ERROR_P)),
            outcome=outcome,
            dead_letter_ms=dead_letter,
            settled_ms=settled,
        )

    def _start(self, qg: int, low: int, high: int) -> int | None:
        """A random sample in [low, high] where an episode of ``qg`` can start: behind, or
        with at least two messages more than the previous sample's committed offset (the
        episode then holds the offset one below the max). Its committed offset is one its
        previous sample did not have, so the planted episode starts exactly there."""
        low = max(low, 1)
        if high < low:
            return None
        span = np.arange(low, high + 1)
        behind = self.committed[qg, span] < self.max_offset[qg, span]
        room = self.max_offset[qg, span] >= self.committed[qg, span - 1] + 2
        ok = span[behind | room]
        return int(self.rng.choice(ok)) if len(ok) else None


def _retry_times(since_ms: int, end_ms: int) -> Ints:
    """Retries from ``since_ms`` with a doubling delay, until ``end_ms``."""
    cap = max(RETRY_CAP_MS, (end_ms - since_ms) // MAX_RETRIES_PER_EPISODE)
    times, at, delay = [], since_ms, RETRY_FIRST_MS
    while at < end_ms:
        times.append(at)
        at += delay
        delay = min(2 * delay, cap)
    return np.array(times, dtype=np.int64)


class _Ownership:
    """Deploys (every queue changes hands), lost locks (one queue does), fencing tokens."""

    def __init__(self, rng: np.random.Generator, topo: Topology, day0: int, events: int) -> None:
        self.rng, self.topo, self.day0 = rng, topo, day0
        self.deploys: list[tuple[str, int, int]] = []
        self.handoffs: list[Handoff] = []
        self.changes: dict[int, list[tuple[int, str, int]]] = {}
        for qg in range(topo.qgs):
            first = consumer_name(self._group(qg), 0, self._slot(qg, 0))
            self.changes[qg] = [(day0 - HOUR, first, int(rng.integers(100, 5000)))]
        for group in GROUP_NAMES:
            for generation, hour in enumerate(DEPLOY_HOURS, start=1):
                at = day0 + int(hour * HOUR) + int(rng.integers(0, 2 * MINUTE))
                self.deploys.append((group, at, generation))
        losses = max(2, round(events * LOCK_LOSS_SHARE))
        planned = [(at, "deploy", qg) for qg in range(topo.qgs) for at in self._deploys_of(qg)]
        for _ in range(losses):
            at = day0 + int(rng.integers(10 * MINUTE, DAY_MS - 10 * MINUTE))
            kind = "lock_lost" if rng.random() < 0.7 else "lock_renew_failed"
            planned.append((at, kind, int(rng.integers(0, topo.qgs))))
        for at, reason, qg in sorted(planned):
            self._hand_over(qg, at, reason)

    def _group(self, qg: int) -> str:
        return GROUP_NAMES[int(self.topo.qg_group[qg])]

    def _slot(self, qg: int, generation: int) -> int:
        return int(self.topo.cell_queue[self.topo.qg_cell[qg]] + generation) % CONSUMERS

    def _deploys_of(self, qg: int) -> list[int]:
        group = self._group(qg)
        return [
            at + int(self.rng.integers(500, 8 * SECOND)) for g, at, _ in self.deploys if g == group
        ]

    def _hand_over(self, qg: int, ended: int, reason: str) -> None:
        _, previous, token = self.changes[qg][-1]
        group = self._group(qg)
        generation = sum(1 for g, d, _ in self.deploys if g == group and d <= ended)
        slot = self._slot(qg, generation)
        if reason == "deploy":
            at, ended = ended, ended - int(self.rng.integers(100, 2 * SECOND))
        else:  # another member takes the queue over
            at = ended + int(self.rng.integers(2 * SECOND, 15 * SECOND))
            slot = (slot + 1 + int(self.rng.integers(0, CONSUMERS - 1))) % CONSUMERS
        owner = consumer_name(group, generation, slot)
        fenced = reason != "deploy" and bool(self.rng.random() < 0.5)
        self.changes[qg].append((at, owner, token + 1))
        self.handoffs.append(
            Handoff(qg, ended, at, owner, token + 1, reason, previous, token, fenced)
        )

    def lookup(self) -> tuple[Ints, tuple[str, ...], Ints, Ints]:
        """(keys ``qg * 2**45 + ms``, names, name index, token) of every change, sorted."""
        names = sorted({name for changes in self.changes.values() for _, name, _ in changes})
        rows = [
            ((qg << 45) + at, names.index(name), token)
            for qg, changes in self.changes.items()
            for at, name, token in changes
        ]
        rows.sort()
        return (
            np.array([r[0] for r in rows], dtype=np.int64),
            tuple(names),
            np.array([r[1] for r in rows], dtype=np.int64),
            np.array([r[2] for r in rows], dtype=np.int64),
        )
