"""Scheduled work (Celery beat): lag sampling into the event log, and retention.

``sample_lag`` is skipped while Redis is unreachable (it returns ``SKIPPED``): that tick's
samples are missing, the next tick samples again. A tick samples every (topic, queue,
group) but writes one stream entry per (topic, group, owner) and up to
``SAMPLES_PER_EVENT`` queues (``sample_batches``): the ingester stores them back as one
row per queue (``ingest_store.expand_samples``), so the stream's load follows the
consumers, not the queues (docs/events.md §2)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, NamedTuple

import redis
from celery import shared_task
from django.utils import timezone

from lockstep.dashboard.web import retention
from lockstep.dashboard.web.redis_conn import get_redis, skipped_during_redis_outage
from lockstep.workers import events as ev
from lockstep.workers.config import Limits
from lockstep.workers.inspect import (
    BlockedKey,
    GroupState,
    HeldKey,
    held_keys,
    keys_at,
    list_topics,
    redis_now_ms,
)
from lockstep.workers.inspect.consumers import QueueCardKey, cards_of, consumers
from lockstep.workers.inspect.lag import topic_lag
from lockstep.workers.inspect.state import group_state
from lockstep.workers.refs import GroupQueue, QueueRef
from lockstep.workers.topics import Topic

# A sample is one per (topic, queue, group) every LOCKSTEP_LAG_SAMPLE_SECONDS: its key
# lists are capped so that a queue with thousands of stuck keys still makes a small
# sample. The owner's card lists its 20 blocked longest already.
BLOCKED_KEYS_CAP = 20
HELD_KEYS_CAP = 50
ERROR_CHARS = 200
# Queues per lag_sampled stream entry. A queue's sample is 200-300 bytes of JSON without
# blocked or held keys, so a full entry is 50-75 KB: one XADD and one JSON parse, under
# 100 KB, while a tick of 16,384 (queue, group) pairs owned by 16 consumers is 64 entries
# instead of 16,384.
SAMPLES_PER_EVENT = 256


class _Cell(NamedTuple):
    """One group on one queue of a topic, as sampled."""

    at: GroupQueue
    max_offset: int
    state: GroupState


@shared_task
@skipped_during_redis_outage
def sample_lag() -> int:
    """Append every (topic, queue, group)'s lag sample, batched per (topic, group, owner)
    (``sample_batches``): the history the queue charts and the nightly analytics read once
    the ingester stored it per queue (docs/events.md §2, docs/analytics.md §2). Returns the
    stream entries written."""
    client = get_redis()
    entries = sample_batches(lag_samples(client))
    return ev.append(client, entries, Limits.from_env().events_maxlen)


def sample_batches(samples: list[ev.Event]) -> list[ev.Event]:
    """``samples`` (one per (topic, queue, group), as ``lag_samples`` makes them) as the
    ``lag_sampled`` entries the stream carries: per (topic, group, owner), sorted by those,
    the samples in queue order, at most ``SAMPLES_PER_EVENT`` per entry. An entry names no
    queue; its ``consumer`` is the owner ("" for the unowned queues) and its details are
    ``{"samples": [{"queue": <queue>, **<the sample's details>}, ...]}``."""
    owned: dict[tuple[str, str, str], list[ev.Event]] = defaultdict(list)
    for sample in sorted(samples, key=_queue_of):
        owned[(sample.topic, sample.group, str(sample.details.get("owner") or ""))].append(sample)
    return [
        _batch(topic, group, owner, queues[i : i + SAMPLES_PER_EVENT])
        for (topic, group, owner), queues in sorted(owned.items())
        for i in range(0, len(queues), SAMPLES_PER_EVENT)
    ]


def _queue_of(sample: ev.Event) -> int:
    return -1 if sample.queue is None else sample.queue


def _batch(topic: str, group: str, owner: str, samples: list[ev.Event]) -> ev.Event:
    return ev.Event(
        ev.LAG_SAMPLED,
        samples[0].ts_ms,
        topic,
        group,
        consumer=owner,
        details={"samples": [{"queue": s.queue, **s.details} for s in samples]},
    )


def lag_samples(client: redis.Redis) -> list[ev.Event]:
    """Every (topic, queue, group)'s sample at one Redis time, one event each as the
    ingester stores it (the stream carries them batched: ``sample_batches``): its lag (as
    ``workers.inspect.overview``), its owner's state, retries and blocked keys (as
    ``topic_state``), its held keys, and the key of the message at its committed offset
    when it is behind. The live consumers are read once, then each topic in a few
    pipelined round trips: its lag, and only where there are any, its held keys and the
    keys at the committed offsets."""
    now_ms = redis_now_ms(client)
    live = consumers(client)
    live_ids = {c["id"] for c in live}
    cards = cards_of(live, None)
    samples = []
    for topic in list_topics(client):
        cells: list[_Cell] = []
        for q in topic_lag(client, topic, now_ms)["queues"]:
            ref = QueueRef(topic.name, q["queue"])
            for g in q["groups"]:
                card = cards.get(QueueCardKey(ref, g["group"], g["owner"] or ""))
                state = group_state(g, card, now_ms, owner_live=g["owner"] in live_ids)
                cells.append(_Cell(GroupQueue(ref, g["group"]), q["max_offset"], state))
        held = _held(client, topic, cells)
        heads = _head_keys(client, cells)
        samples += [
            ev.Event(
                ev.LAG_SAMPLED,
                now_ms,
                topic.name,
                cell.at.group,
                cell.at.queue,
                details=_details(cell, held.get(cell.at, []), heads),
            )
            for cell in cells
        ]
    return samples


def _details(
    cell: _Cell, held: list[dict[str, Any]], heads: dict[tuple[QueueRef, int], str]
) -> dict[str, Any]:
    """A sample's details (docs/events.md §2): ``blocked_keys`` lists the owner's blocked
    keys (``held`` false), then the held ones (``held`` true, ``error`` "held", at the
    offset of the dead letter holding them, ``waiting`` their parked messages)."""
    g = cell.state
    head = _head_offset(g, cell.max_offset)
    blocked = [_blocked(b) for b in g.get("blocked_keys", [])[:BLOCKED_KEYS_CAP]]
    return {
        "max_offset": cell.max_offset,
        "committed_offset": g["committed_offset"],
        "lag": g["lag"],
        "time_lag_s": g["time_lag_s"],
        "owner": g["owner"] or "",
        "state": g["state"],
        "retries": g["retries"],
        "head_offset": head,
        "head_key": "" if head is None else heads.get((cell.at.ref, head), ""),
        "blocked_count": g.get("blocked_count", 0),
        "blocked_keys": blocked + held,
        "held_keys": g["parked_keys"],
        "parked": g["parked"],
    }


def _head_offset(g: GroupState, max_offset: int) -> int | None:
    """The committed offset while a message waits there (the group is behind on the
    stream itself, not only on parked messages); ``None`` otherwise."""
    behind = g["lag"] > 0 and g["committed_offset"] < max_offset
    return g["committed_offset"] if behind else None


def _blocked(b: BlockedKey) -> dict[str, Any]:
    return {
        "key": b["key"],
        "offset": b["offset"],
        "retries": b["retries"],
        "waiting": b["waiting"],
        "since_ms": b["since_ms"],
        "error": str(b.get("error") or "")[:ERROR_CHARS],
        "held": False,
    }


def _held(
    client: redis.Redis, topic: Topic, cells: list[_Cell]
) -> dict[GroupQueue, list[dict[str, Any]]]:
    """A group on a queue -> its held keys, held longest first, at most ``HELD_KEYS_CAP``;
    read only for the groups that have any (the lag counted them)."""
    groups = sorted({c.at.group for c in cells if c.state["parked_keys"]})
    found: dict[GroupQueue, list[HeldKey]] = defaultdict(list)
    for group in groups:
        for h in held_keys(client, topic.name, group):
            found[GroupQueue(QueueRef(topic.name, h["queue"]), group)].append(h)
    return {
        cell: [_held_entry(h) for h in sorted(hs, key=_held_longest_first)[:HELD_KEYS_CAP]]
        for cell, hs in found.items()
    }


def _held_longest_first(h: HeldKey) -> tuple[bool, int, str]:
    return h["since_ms"] is None, h["since_ms"] or 0, h["key"]


def _held_entry(h: HeldKey) -> dict[str, Any]:
    return {
        "key": h["key"],
        "offset": h["offset"],
        "retries": None,  # the dead letter's; not read for a sample
        "waiting": h["messages"],
        "since_ms": h["since_ms"],
        "error": "held",
        "held": True,
    }


def _head_keys(client: redis.Redis, cells: list[_Cell]) -> dict[tuple[QueueRef, int], str]:
    """(queue, offset) -> the key of the message at each head offset, "" when the stream
    has no such entry or it is malformed (``workers.inspect.keys_at``: one pipelined round
    trip for the whole topic)."""
    heads = {(c.at.ref, _head_offset(c.state, c.max_offset)) for c in cells}
    return keys_at(client, sorted((ref, head) for ref, head in heads if head is not None))


@shared_task
def prune_events() -> int:
    """Hourly (beat): every kind of time-series row past its retention is deleted
    (``dashboard.web.retention``: the kinds the apps register; events, samples,
    analytics runs, resolved alerts, test deliveries).
    Returns the rows deleted over all kinds."""
    return sum(retention.prune_all(timezone.now()).values())
