"""One reading of everything the rules look at, taken once per evaluation tick: the
topics' state from Redis (``workers.inspect``), the consumers' cards, held keys, and the
stored event history (lock grants, lag samples, dead letters) from the database.

Redis is read eagerly (a few pipelined round trips per topic); the database only when a
rule asks, and each query once per tick.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, cast

import redis
from django.db.models import Count

from lockstep.dashboard.web.store.models import Event
from lockstep.dashboard.web.store.queries import at
from lockstep.dashboard.web.store.stuck import read_stuck
from lockstep.workers import events as ev
from lockstep.workers.errors import UnknownTopicError
from lockstep.workers.inspect import (
    GroupState,
    HeldKey,
    LiveConsumer,
    Overview,
    TopicLag,
    TopicState,
    held_keys,
    list_topics,
    redis_now_ms,
    registered_consumers,
    topic_state,
)
from lockstep.workers.inspect.consumers import heartbeat_timeout
from lockstep.workers.refs import GroupQueue, QueueRef


@dataclass
class LagSample:
    at_ms: int
    committed_offset: int
    lag: int


class Tracker:
    """Since when each condition has held, across ticks: ``since(subject, value, now)``
    returns the first time ``value`` was seen for ``subject`` without a break (a different
    value, or a tick without the subject, starts again). Kept in memory by the evaluator:
    after a restart a condition waits its threshold again, unless a rule seeds it from the
    stored history (``dlq_growth`` does, from the stored dead letters)."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[Any, int]] = {}
        self._touched: set[str] = set()

    def since(
        self,
        subject: str,
        value: Any,
        now_ms: int,
        seed: Callable[[], int | None] | None = None,
    ) -> int:
        """``seed`` (asked only when the subject or its value is new) may say the
        condition began earlier, from stored history."""
        self._touched.add(subject)
        held = self._seen.get(subject)
        if held is not None and held[0] == value:
            return held[1]
        seed_ms = seed() if seed is not None else None
        start = min(now_ms, seed_ms) if seed_ms is not None else now_ms
        self._seen[subject] = (value, start)
        return start

    def end_tick(self) -> None:
        """Forget subjects not looked at during this tick (their condition broke)."""
        for subject in set(self._seen) - self._touched:
            del self._seen[subject]
        self._touched.clear()


@dataclass
class LiveState:
    """The live state at ``now_ms`` (Redis's clock)."""

    client: redis.Redis
    now_ms: int
    topics: list[TopicState]
    consumers: list[LiveConsumer]  # every registered card, live or silent
    heartbeat_timeout_s: float
    tracker: Tracker = field(default_factory=Tracker)

    @classmethod
    def read(cls, client: redis.Redis, tracker: Tracker | None = None) -> LiveState:
        topics = []
        for topic in list_topics(client):
            try:
                topics.append(topic_state(client, topic.name))
            except UnknownTopicError:  # deleted between the listing and the read
                continue
        return cls(
            client=client,
            now_ms=redis_now_ms(client),
            topics=topics,
            consumers=registered_consumers(client),
            heartbeat_timeout_s=heartbeat_timeout(),
            tracker=tracker or Tracker(),
        )

    def queue_groups(self) -> Iterator[tuple[GroupQueue, GroupState]]:
        """Every group on every queue with its state, in topic and queue order."""
        for topic in self.topics:
            for q in topic["queues"]:
                ref = QueueRef(topic["name"], q["queue"])
                for g in q["groups"]:
                    yield GroupQueue(ref, g["group"]), g

    def heartbeat_of(self, consumer_id: str | None) -> int | None:
        """The last heartbeat (ms) on ``consumer_id``'s card, if it still has one."""
        for c in self.consumers:
            if c["id"] == consumer_id:
                return c["heartbeat_at_ms"] or None
        return None

    @property
    def now(self) -> datetime:
        return at(self.now_ms)

    def held(self, topic: str, group: str) -> list[HeldKey]:
        """Held keys of (topic, group) (``after_dlq = hold``), read on demand."""
        try:
            return held_keys(self.client, topic, group)
        except UnknownTopicError:
            return []

    @cached_property
    def stuck(self) -> list[dict[str, Any]]:
        """The stuck queues of this reading, as the overview lists them
        (``web.store.stuck.read_stuck``, docs/stuck.md): the one definition."""
        snapshot: Overview = {
            "generated_at_ms": self.now_ms,
            "topics": [cast(TopicLag, t) for t in self.topics],
        }
        return read_stuck(self.client, snapshot, self.consumers)

    def dead_letter_times(self, window_s: float) -> dict[tuple[str, str], list[int]]:
        """(topic, group) -> the times (ms) of its new dead letters (and malformed
        entries) within ``window_s``, oldest first."""
        rows = (
            Event.objects.filter(
                type__in=(ev.DEAD_LETTERED, ev.MALFORMED_ENTRY),
                ts__gte=at(int(self.now_ms - window_s * 1000)),
            )
            .order_by("ts", "id")
            .values_list("topic", "group", "ts")
        )
        out: dict[tuple[str, str], list[int]] = defaultdict(list)
        for topic, group, ts in rows:
            out[(topic, group)].append(int(ts.timestamp() * 1000))
        return out

    def lock_grants(self, window_s: float) -> Counter[GroupQueue]:
        """Lock grants (``lock_acquired``) per group and queue within ``window_s``."""
        if window_s not in self._grants:
            rows = (
                Event.objects.filter(
                    type=ev.LOCK_ACQUIRED,
                    queue__isnull=False,
                    ts__gte=at(int(self.now_ms - window_s * 1000)),
                )
                .values("topic", "group", "queue")
                .annotate(n=Count("id"))
            )
            self._grants[window_s] = Counter(
                {
                    GroupQueue(QueueRef(r["topic"], r["queue"]), r["group"]): int(r["n"])
                    for r in rows
                }
            )
        return self._grants[window_s]

    def lag_samples(self, window_s: float) -> dict[GroupQueue, list[LagSample]]:
        """Lag samples per group and queue within ``window_s``, oldest first."""
        return self._samples_since(int(self.now_ms - window_s * 1000))

    @cached_property
    def _grants(self) -> dict[float, Counter[GroupQueue]]:
        return {}

    def _samples_since(self, start_ms: int) -> dict[GroupQueue, list[LagSample]]:
        out: dict[GroupQueue, list[LagSample]] = defaultdict(list)
        rows = (
            Event.objects.filter(type=ev.LAG_SAMPLED, ts__gte=at(start_ms))
            .order_by("ts", "id")
            .values_list("topic", "group", "queue", "ts", "details")
        )
        for topic, group, queue, ts, details in rows:
            if queue is None:
                continue
            out[GroupQueue(QueueRef(topic, queue), group)].append(
                LagSample(
                    at_ms=int(ts.timestamp() * 1000),
                    committed_offset=int(details.get("committed_offset", 0) or 0),
                    lag=int(details.get("lag", 0) or 0),
                )
            )
        return out
