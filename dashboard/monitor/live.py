"""Live pushes through the channel layer: coalesced, numbered hints.

Channel-layer messages are at-most-once (``channels_redis`` drops a message when the
receiving channel is full, about 1,000 a second here) and carry no ordering promise, so
nothing is ever sent per event. Instead, every ``push`` first brings the fleet state up
to date (``web.store.fleet``), then sends at most one message per channel group,
numbered by ``web.publish`` (its group's ``seq``); a push that also runs a step of a
sweep of the fleet sends twice, the named queues' changes first:

- group ``overview``: ``{"type": "overview.update", "seq"}`` when the fleet state
  changed: a hint, no data; each overview socket reads its own page of the state and
  sends its page the changes (``monitor.consumers.OverviewConsumer``);
- group ``queue_group(topic, queue)``, only for a queue some socket watches (``watch``)
  that changed (an event of it was stored, or its row of the fleet state moved):
  ``{"type": "queue.update", "seq", "data": <as workers.inspect.queue_state>, "events":
  [<the queue's events stored since its previous update, at most the RECENT_EVENTS
  latest>]}``. Events are shaped and filtered as in the queue's JSON view
  (``queries.event_dict``, newest first, without the periodic ``NOISY_TYPES``), except
  that details over DETAILS_MAX_CHARS keep only their scalar fields (``"truncated":
  true``);
- group ``events``: ``{"type": "events.hint", "seq", "last_id": <last stream ID stored>}``
  when events were stored since the last hint.

What a push costs follows what changed and what is watched, never the fleet's size
(but for a sweep, on its own cadence). A receiver that sees a seq other than the
previous one + 1 (a lost message, or a restarted ingester: its first push is ``fresh``
and skips a number) must re-read the JSON view; events may repeat across a snapshot and
the next update (dedupe by ``id``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Iterable
from contextlib import suppress
from typing import Any

import redis
from django.db import DatabaseError, InterfaceError, close_old_connections

from lockstep.dashboard.monitor.ingest_store import StoredEvent
from lockstep.dashboard.monitor.queries import NOISY_TYPES, event_dict
from lockstep.dashboard.web.publish import group_part, publish
from lockstep.dashboard.web.store.fleet import FleetWriter, Reading
from lockstep.dashboard.web.store.models import Event
from lockstep.dashboard.web.store.queries import to_ms
from lockstep.workers.events import LAG_SAMPLED
from lockstep.workers.inspect import TopicState, queue_of
from lockstep.workers.redis_types import as_bytes
from lockstep.workers.refs import QueueRef

log = logging.getLogger(__name__)

OVERVIEW_GROUP = "overview"
EVENTS_GROUP = "events"
# Events per queue update: enough for a live list to stay complete at the runtime's event
# rates (commits are coalesced per 100 ms), small enough for a channel-layer message.
RECENT_EVENTS = 50
# Push at least this often even without events: production moves lag without events.
IDLE_PUSH_SECONDS = 2.0
# A new sweep of the whole fleet starts at most this often after the last one ended (more
# rarely when its steps were slow: ``FleetWriter.sweep_due``); between sweeps, and before
# each of a sweep's steps, the queues events named are read.
SWEEP_SECONDS = 2.0
# A failing push (Redis or the database away) is retried after this, doubling up to the max.
PUSH_BACKOFF_INITIAL = 0.5
PUSH_BACKOFF_MAX = 10.0
# Sockets on a queue register here (``watch``), so a push reads who watches in one call.
WATCHERS_KEY = "lockstep-web:watchers"
WATCH_MAX_AGE_S = 86_400
# Details larger than this (key_state, lanes) are cut down to their scalar fields.
DETAILS_MAX_CHARS = 1000
DETAIL_TEXT_MAX = 200

Message = dict[str, Any]


def queue_group(topic: str, queue: int) -> str:
    """The channel group of one queue: ``queue.<topic>.<queue>`` (a topic name that is
    not a valid group name as is, ``%`` or too long, as ``web.publish.group_part`` makes
    it)."""
    return f"queue.{group_part(topic)}.{queue}"


# What the ingester hands the publisher: stored events, as ``Event`` rows or not yet.
Stored = Event | StoredEvent


def compact_event(row: Stored) -> dict[str, Any]:
    """``event_dict(row)`` with large details reduced to their (shortened) scalar fields."""
    data = event_dict(row if isinstance(row, Event) else row.model())
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


class Publisher:
    """Collects what the ingester stored, keeps the fleet state (``web.store.fleet``) and
    sends the coalesced pushes. Not thread-safe: one ingester thread owns it.

    Each push refreshes the fleet state first: a read of the queues the stored events
    named (and of the watched ones), then the next step of a sweep of the whole fleet
    when one is due (``FleetWriter.sweep_due``; a sweep of a large fleet is many steps).
    Then it sends one hint to the overview's group (its sockets re-read their own page
    of the state), an update to each *watched* queue that changed (``watch``: a queue
    nobody has open costs no message) and the events hint."""

    def __init__(self, client: redis.Redis, interval: float = 0.5) -> None:
        self.client = client
        self.interval = interval
        self.writer = FleetWriter(client)
        self._pushed = False
        self._pending: dict[QueueRef, deque[Stored]] = {}
        self._named: set[QueueRef] = set()
        self._watched: set[QueueRef] = set()
        self._last_id = ""
        self._hinted_id = ""
        self._dirty = False
        self._last_push = 0.0

    def record(self, rows: Iterable[Stored], last_id: str) -> None:
        """Remember newly stored events (their queues are read and pushed at the next
        tick)."""
        for row in rows:
            if row.type == LAG_SAMPLED and row.topic and row.queue is not None:
                self.writer.note_sample(
                    (row.topic, row.group, row.queue), to_ms(row.ts), row.details
                )
            # Periodic events (samples, lane and key snapshots) change nothing a push
            # shows that the next sweep would not catch.
            if row.topic and row.queue is not None and row.type not in NOISY_TYPES:
                ref = QueueRef(row.topic, row.queue)
                self._named.add(ref)
                recent = self._pending.setdefault(ref, deque(maxlen=RECENT_EVENTS))
                recent.appendleft(row)  # shaped at push time: most are dropped before
        self._last_id = last_id
        self._dirty = True

    def due(self) -> bool:
        busy = self._dirty or self.writer.sweeping
        wait = self.interval if busy else IDLE_PUSH_SECONDS
        return time.monotonic() - self._last_push >= wait

    def push(self) -> int:
        """Refresh the fleet state and send what changed; returns how many messages were
        sent to the channel layer. Redis and database errors propagate (the caller backs
        off; what was named stays pending for the next push).

        Two sends when a sweep step is due: first what the named and watched queues
        changed, then the step's changes. A change an event named is therefore on the
        pages one refresh after it was stored, never held behind a step of the sweep
        (docs/fleet-state.md)."""
        self._last_push = time.monotonic()
        self._dirty = False
        sent = self._send(self._refresh_named())
        if self.writer.sweep_due(SWEEP_SECONDS):
            sent += self._send([self.writer.sweep_step()[0]])
        return sent

    def _send(self, readings: list[Reading]) -> int:
        # The first push names every queue, so a fresh start leaves a gap in every group
        # a page may watch.
        sent = publish(self._collect(readings), "live pushes", fresh=not self._pushed)
        self._pushed = self._pushed or sent > 0
        return sent

    def stop(self, *, clear_writer: bool = True) -> None:
        """The ingester is stopping: with ``clear_writer``, pages read the fleet themselves
        until another writer runs (as ``PushThread.stop``)."""
        if clear_writer:
            self.writer.stop()

    def _refresh_named(self) -> list[Reading]:
        """A read of the queues events named and of those some socket watches
        (production moves a watched queue without an event)."""
        self._watched = watched_queues(self.client)
        readings: list[Reading] = []
        if self._named or self._watched:
            readings.append(self.writer.refresh(self._named | self._watched))
        self._named = set()
        return readings

    def _collect(self, readings: list[Reading]) -> list[tuple[str, Message]]:
        # Every push hints the overview's sockets, changed or not: a page that hears
        # nothing for a while takes the ingester for gone (live_socket.js, stale).
        messages: list[tuple[str, Message]] = [(OVERVIEW_GROUP, {"type": "overview.update"})]
        sent: set[QueueRef] = set()
        for reading in readings:
            messages += self._queue_messages(reading, sent)
        self._pending.clear()  # events of queues not read (a topic gone) or not watched
        if self._last_id and self._last_id != self._hinted_id:
            self._hinted_id = self._last_id
            messages.append((EVENTS_GROUP, {"type": "events.hint", "last_id": self._last_id}))
        return messages

    def _queue_messages(self, reading: Reading, sent: set[QueueRef]) -> list[tuple[str, Message]]:
        """An update for each watched queue of ``reading`` that changed or had events, but
        for those in ``sent`` (already updated in this push); adds those it updates."""
        moved = {QueueRef(t, q) for t, _, q in reading.changed}
        out: list[tuple[str, Message]] = []
        for state in reading.states:
            for q in state["queues"]:
                ref = QueueRef(state["name"], q["queue"])
                rows = self._pending.pop(ref, ())
                fresh = rows or ref in moved or not self._pushed
                if ref in self._watched and ref not in sent and fresh:
                    sent.add(ref)
                    events = [compact_event(row) for row in rows]
                    out.append(self._queue_message(state, q["queue"], events))
        return out

    def _queue_message(
        self, state: TopicState, queue: int, events: list[dict[str, Any]]
    ) -> tuple[str, Message]:
        return queue_group(state["name"], queue), {
            "type": "queue.update",
            "data": queue_of(state, queue),  # queue_state's shape, from the fleet reading
            "events": events,
        }


class PushThread:
    """A ``Publisher`` on a thread of its own, for the ingester: ``record`` hands it what
    was stored (a list append under a lock) and ``push`` wakes it; a sweep of a large
    fleet, seconds long, never holds up storing. Same interface as ``Publisher``; ``due``
    is always false (the thread keeps its own time). Errors are logged and retried with
    backoff on the thread; the database connection is the thread's own."""

    def __init__(self, client: redis.Redis, interval: float = 0.5) -> None:
        self.publisher = Publisher(client, interval)
        self.interval = interval
        self._lock = threading.Lock()
        self._stored: list[tuple[list[Stored], str]] = []
        self._halt = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lockstep-live-pushes", daemon=True)
        self._thread.start()

    def record(self, rows: Iterable[Stored], last_id: str) -> None:
        with self._lock:
            self._stored.append((list(rows), last_id))
        self._wake.set()

    def due(self) -> bool:
        return False

    def push(self) -> int:
        self._wake.set()
        return 0

    def stop(self, *, clear_writer: bool = True) -> None:
        """Stop the thread (after its push in progress); ``clear_writer``: say the fleet
        writer is gone (a process stopping; not a handover to another ingester)."""
        self._halt.set()
        self._wake.set()
        self._thread.join(60)
        if clear_writer:
            with suppress(redis.RedisError):
                self.publisher.stop()

    def _run(self) -> None:
        backoff = PUSH_BACKOFF_INITIAL
        while not self._halt.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            with self._lock:
                stored, self._stored = self._stored, []
            for rows, last_id in stored:
                self.publisher.record(rows, last_id)
            try:
                if self.publisher.due():
                    self.publisher.push()
                backoff = PUSH_BACKOFF_INITIAL
            except (redis.RedisError, DatabaseError, InterfaceError) as exc:
                log.warning(
                    "live pushes: %s; retrying in %.1fs", " ".join(str(exc).split()), backoff
                )
                close_old_connections()
                self._halt.wait(backoff)
                backoff = min(PUSH_BACKOFF_MAX, backoff * 2)
            except Exception:  # a bug: logged with its traceback, the thread goes on
                log.exception("live pushes failed; retrying in %.1fs", backoff)
                self._halt.wait(backoff)
                backoff = min(PUSH_BACKOFF_MAX, backoff * 2)
        close_old_connections()


# ---- who watches which queue -------------------------------------------------------------


def watch(client: redis.Redis, ref: QueueRef, channel: str) -> None:
    """A socket on ``channel`` watches queue ``ref``: the publisher reads it and sends it
    updates from now on."""
    client.zadd(WATCHERS_KEY, {_watcher(ref, channel): time.time()})


def unwatch(client: redis.Redis, ref: QueueRef, channel: str) -> None:
    client.zrem(WATCHERS_KEY, _watcher(ref, channel))


def _watcher(ref: QueueRef, channel: str) -> str:
    return json.dumps([ref.topic, ref.queue, channel])


def watched_queues(client: redis.Redis) -> set[QueueRef]:
    """The queues some socket watches. Entries a crashed server left behind expire after
    ``WATCH_MAX_AGE_S`` (a socket open longer is counted again when it reconnects; until
    then its queue is pushed to anyway, as a stale entry is)."""
    client.zremrangebyscore(WATCHERS_KEY, "-inf", time.time() - WATCH_MAX_AGE_S)
    out = set()
    for member in client.zrange(WATCHERS_KEY, 0, -1):
        try:
            topic, queue, _ = json.loads(as_bytes(member))
            out.add(QueueRef(str(topic), int(queue)))
        except (ValueError, TypeError):
            continue  # an entry of an older version: it expires
    return out
