"""Live pushes through the channel layer: coalesced, numbered hints.

Channel-layer messages are at-most-once (``channels_redis`` drops a message when the
receiving channel is full, about 1,000 a second here) and carry no ordering promise, so
nothing is ever sent per event. Instead, every ``push`` sends at most one message per
channel group, each carrying state read from Redis at that moment, numbered by
``web.publish`` (its group's ``seq``):

- group ``overview``: ``{"type": "overview.update", "seq", "data": overview()}``;
- group ``queue_group(topic, queue)``, only for queues that changed since their last push
  (an event of the queue was stored, or its offsets, lag, owner or token moved):
  ``{"type": "queue.update", "seq", "data": <as workers.inspect.queue_state>, "events":
  [<the queue's events stored since its previous update, at most the RECENT_EVENTS
  latest>]}``. Events are shaped and filtered as in the queue's JSON view
  (``queries.event_dict``, newest first, without the periodic ``NOISY_TYPES``), except
  that details over DETAILS_MAX_CHARS keep only their scalar fields (``"truncated":
  true``);
- group ``events``: ``{"type": "events.hint", "seq", "last_id": <last stream ID stored>}``
  when events were stored since the last hint.

A receiver that sees a seq other than the previous one + 1 (a lost message, or a restarted
ingester: its first push is ``fresh`` and skips a number) must re-read the JSON view;
events may repeat across a snapshot and the next update (dedupe by ``id``).
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict, deque
from collections.abc import Iterable
from typing import Any

import redis

from lockstep.dashboard.monitor.queries import NOISY_TYPES, event_dict
from lockstep.dashboard.web.publish import group_part, publish
from lockstep.dashboard.web.store.models import Event
from lockstep.workers.errors import UnknownTopicError
from lockstep.workers.inspect import QueueLag, TopicState, overview, queue_of, topic_state
from lockstep.workers.refs import QueueRef

log = logging.getLogger(__name__)

OVERVIEW_GROUP = "overview"
EVENTS_GROUP = "events"
# Events per queue update: enough for a live list to stay complete at the runtime's event
# rates (commits are coalesced per 100 ms), small enough for a channel-layer message.
RECENT_EVENTS = 50
# Push at least this often even without events: production moves lag without events.
IDLE_PUSH_SECONDS = 2.0
# Details larger than this (key_state, lanes) are cut down to their scalar fields.
DETAILS_MAX_CHARS = 1000
DETAIL_TEXT_MAX = 200

Message = dict[str, Any]


def queue_group(topic: str, queue: int) -> str:
    """The channel group of one queue: ``queue.<topic>.<queue>`` (a topic name that is
    not a valid group name as is, ``%`` or too long, as ``web.publish.group_part`` makes
    it)."""
    return f"queue.{group_part(topic)}.{queue}"


def compact_event(row: Event) -> dict[str, Any]:
    """``event_dict(row)`` with large details reduced to their (shortened) scalar fields."""
    data = event_dict(row)
    data["details"] = compact_details(row.details)
    return data


def compact_details(details: dict[str, Any]) -> dict[str, Any]:
    if len(json.dumps(details, default=str)) <= DETAILS_MAX_CHARS:
        return details
    out: dict[str, Any] = {"truncated": True}
    for name, value in details.items():
        if isinstance(value, str):
            out[name] = value[:DETAIL_TEXT_MAX]
        elif isinstance(value, bool | int | float) or value is None:
            out[name] = value
    return out


def _signature(queue: QueueLag) -> tuple[Any, ...]:
    """What makes a queue worth a push without events: produced, committed, parked, owner."""
    return (
        queue["max_offset"],
        tuple(
            (
                g["group"],
                g["committed_offset"],
                g["completed_above"],
                g["parked"],
                g["owner"],
                g["token"],
            )
            for g in queue["groups"]
        ),
    )


class Publisher:
    """Collects what the ingester stored and sends the coalesced pushes. Not thread-safe:
    one ingester thread owns it."""

    def __init__(self, client: redis.Redis, interval: float = 0.5) -> None:
        self.client = client
        self.interval = interval
        self._pushed = False
        self._pending: dict[QueueRef, deque[Event]] = {}
        self._signatures: dict[QueueRef, tuple[Any, ...]] = {}
        self._last_id = ""
        self._hinted_id = ""
        self._dirty = False
        self._last_push = 0.0

    def record(self, rows: Iterable[Event], last_id: str) -> None:
        """Remember newly stored events (their queues are pushed at the next tick)."""
        for row in rows:
            # Periodic events (samples, lane and key snapshots) change nothing a push
            # shows that the state signature would not catch.
            if row.topic and row.queue is not None and row.type not in NOISY_TYPES:
                recent = self._pending.setdefault(
                    QueueRef(row.topic, row.queue), deque(maxlen=RECENT_EVENTS)
                )
                recent.appendleft(row)  # shaped at push time: most are dropped before
        self._last_id = last_id
        self._dirty = True

    def due(self) -> bool:
        wait = self.interval if self._dirty else IDLE_PUSH_SECONDS
        return time.monotonic() - self._last_push >= wait

    def push(self) -> int:
        """Read the state of what changed and send it; returns how many messages were sent
        to the channel layer. Redis errors propagate (the caller backs off)."""
        self._last_push = time.monotonic()
        self._dirty = False
        # The first push names every queue (no signature is known yet), so a fresh
        # start leaves a gap in every group a page may watch.
        sent = publish(self._collect(), "live pushes", fresh=not self._pushed)
        self._pushed = self._pushed or sent > 0
        return sent

    def _collect(self) -> list[tuple[str, Message]]:
        snapshot = overview(self.client)
        messages: list[tuple[str, Message]] = [
            (OVERVIEW_GROUP, {"type": "overview.update", "data": snapshot})
        ]
        changed = set(self._pending)
        for topic in snapshot["topics"]:
            for q in topic["queues"]:
                where = QueueRef(topic["name"], q["queue"])
                signature = _signature(q)
                if self._signatures.get(where) != signature:
                    self._signatures[where] = signature
                    changed.add(where)
        messages += self._queue_messages(changed)
        if self._last_id and self._last_id != self._hinted_id:
            self._hinted_id = self._last_id
            messages.append((EVENTS_GROUP, {"type": "events.hint", "last_id": self._last_id}))
        return messages

    def _queue_messages(self, changed: set[QueueRef]) -> list[tuple[str, Message]]:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for ref in sorted(changed):
            by_topic[ref.topic].append(ref.queue)
        out: list[tuple[str, Message]] = []
        for topic, queues in by_topic.items():
            try:
                state = topic_state(self.client, topic)
            except UnknownTopicError:  # events may name a topic that was never created
                for queue in queues:
                    self._pending.pop(QueueRef(topic, queue), None)
                continue
            for queue in queues:
                rows = self._pending.pop(QueueRef(topic, queue), ())
                if 0 <= queue < state["queue_count"]:
                    events = [compact_event(row) for row in rows]
                    out.append(self._queue_message(state, queue, events))
        return out

    def _queue_message(
        self, state: TopicState, queue: int, events: list[dict[str, Any]]
    ) -> tuple[str, Message]:
        return queue_group(state["name"], queue), {
            "type": "queue.update",
            "data": queue_of(state, queue),  # queue_state's shape, from one topic read
            "events": events,
        }
