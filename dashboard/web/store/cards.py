"""The consumers' cards as the fleet writer reads them (docs/fleet-state.md): each card is
read and parsed at most once per ``CARD_MAX_AGE_S``, and a reading picks out only the
snapshots of the pairs it reads.

A consumer's card holds a snapshot of every queue it owns: at 1,024 queues about a
hundred kilobytes of JSON, which the consumer rewrites every heartbeat interval (3 s).
Reading and parsing every owner's whole card for each refresh of a hundred named queues
was the largest part of a push at 16,384 pairs (seconds a push on the loaded machine).
A card is at most a heartbeat interval old when it is read anyway, so keeping it for a
second more changes what a page shows by less than the card's own age; a card whose
consumer looks dead by its cached heartbeat is read again at once, so no consumer is
judged gone on a stale copy.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import redis

from lockstep.workers.cards import QueueSnapshot
from lockstep.workers.inspect import TopicLag
from lockstep.workers.inspect.consumers import (
    LiveConsumer,
    QueueCardKey,
    cards_of,
    heartbeat_timeout,
    registered_consumers_named,
)
from lockstep.workers.refs import QueueRef

# How long a parsed card is used before it is read again: under the heartbeat interval
# (3 s) at which consumers rewrite their cards.
CARD_MAX_AGE_S = 1.0
# A card not asked for this long (its consumer owns nothing read since) is forgotten.
FORGET_AFTER_S = 60.0


class CardCache:
    """Parsed consumer cards by consumer id, for one reader (not thread-safe)."""

    def __init__(self, client: redis.Redis, max_age_s: float = CARD_MAX_AGE_S) -> None:
        self.client = client
        self.max_age_s = max_age_s
        self._consumers: dict[str, LiveConsumer] = {}
        self._snapshots: dict[str, dict[QueueCardKey, QueueSnapshot]] = {}
        self._read_at: dict[str, float] = {}
        self._asked_at: dict[str, float] = {}

    def registered(self, ids: Iterable[str], now_ms: int) -> list[LiveConsumer]:
        """The registered consumers among ``ids`` (as ``registered_consumers_named``),
        sorted by id: a card older than ``max_age_s`` is read again, as is one whose
        consumer its cached heartbeat shows dead at ``now_ms``; a consumer whose card is
        gone is left out."""
        wanted = sorted(set(ids))
        now = time.monotonic()
        timeout_ms = heartbeat_timeout() * 1000
        stale = [i for i in wanted if self._stale(i, now, now_ms, timeout_ms)]
        if stale:
            self._read(stale, now)
        for i in wanted:
            self._asked_at[i] = now
        self._forget(now)
        return [self._consumers[i] for i in wanted if i in self._consumers]

    def snapshots(
        self, lags: list[TopicLag], live_ids: set[str]
    ) -> dict[QueueCardKey, QueueSnapshot]:
        """The live owners' snapshots of the (queue, group) pairs in ``lags``, as
        ``cards_of`` gives them, for those pairs only."""
        out: dict[QueueCardKey, QueueSnapshot] = {}
        for t in lags:
            for q in t["queues"]:
                ref = QueueRef(t["name"], q["queue"])
                for g in q["groups"]:
                    owner = g["owner"]
                    if owner is None or owner not in live_ids:
                        continue
                    key = QueueCardKey(ref, g["group"], owner)
                    snapshot = self._snapshots.get(owner, {}).get(key)
                    if snapshot is not None:
                        out[key] = snapshot
        return out

    def _stale(self, consumer_id: str, now: float, now_ms: int, timeout_ms: float) -> bool:
        read_at = self._read_at.get(consumer_id)
        if read_at is None or now - read_at >= self.max_age_s:
            return True
        card = self._consumers.get(consumer_id)
        return card is not None and now_ms - card["heartbeat_at_ms"] > timeout_ms

    def _read(self, ids: list[str], now: float) -> None:
        found = {c["id"]: c for c in registered_consumers_named(self.client, ids)}
        for i in ids:
            self._read_at[i] = now
            card = found.get(i)
            if card is None:
                self._consumers.pop(i, None)
                self._snapshots.pop(i, None)
            else:
                self._consumers[i] = card
                self._snapshots[i] = cards_of([card], None)

    def _forget(self, now: float) -> None:
        for i in [i for i, at in self._asked_at.items() if now - at > FORGET_AFTER_S]:
            for held in (self._consumers, self._snapshots, self._read_at, self._asked_at):
                held.pop(i, None)
