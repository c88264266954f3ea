"""When each message of a lookup was handled, per group, and in how many attempts: read
from the stored events (docs/events.md §2), so the order a key's messages went in —
after a replay too — can be seen.

Where a handled message's time comes from, most precise first:

- ``replay_succeeded`` (a replayed dead letter, in place or re-published): the consumer's
  report when the replay ran, to the millisecond.
- ``key_released`` (a message parked behind a held key's dead letter): parked messages
  report nothing when they run after the release, in offset order; the key is released
  once the last of them ran, so they were handled *by* then.
- ``offset_committed``: the commit event whose range moved the group past the message.
  Commits are coalesced into one event per commit-event interval
  (``LOCKSTEP_COMMIT_EVENT_INTERVAL``, 5 s) stamped with the last commit's time: the
  message was handled by then, at that resolution. A dead letter's or a park's commit
  also moves past a message, so a message the group dead-lettered or parked never takes
  its time from a commit.

A dead letter that was discarded reads as handled in Redis (it is below the committed
offset and no longer waits); it is told as ``dead_letter_discarded``, and one whose replay
has not reported back yet as ``dead_letter_replayed``.

Attempts: each dead letter of the message counts its ``reconsume_times`` + 1 runs (the
record keeps them), each ``consume_failed`` after the last of them one, and the run that
handled it one; a re-published replay's runs are counted under its new offset too.
Failures are read from the key's events: under queue ordering a message retried in a batch
headed by another key's message is not counted.

Cost: one indexed query for the key's events (newest ``KEY_EVENTS``) and a bounded walk
of the queue's commit events from the oldest message's production (at most
``COMMIT_READS`` reads of ``COMMIT_CHUNK`` rows, skipping to each next message's produce
time), whatever the size of the stored history.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q

from lockstep.dashboard.monitor.queries import int_or_none
from lockstep.dashboard.web.store.models import Event
from lockstep.dashboard.web.store.queries import at, to_ms
from lockstep.workers import events as ev

# The key's newest events read: a key retried or replayed more often than this has its
# oldest attempts uncounted (and the page says "at least").
KEY_EVENTS = 2000
# The commit walk reads the queue's commit events in chunks of this many rows, at most
# COMMIT_READS times: 4,000 rows cover hours of a queue lagging behind with commits
# coalesced every 5 s; a message handled later than that shows no time.
COMMIT_CHUNK = 1000
COMMIT_READS = 4
# Produce times come from the producer's clock, commit times from the consumer's: start
# the walk this much earlier so a consumer clock behind the producer's loses no commit.
CLOCK_SKEW_MS = 60_000

KEY_TYPES = (
    ev.CONSUME_FAILED,
    ev.DEAD_LETTERED,
    ev.DEAD_LETTER_REPLAYED,
    ev.DEAD_LETTER_DISCARDED,
    ev.REPLAY_SUCCEEDED,
    ev.MESSAGES_PARKED,
    ev.KEY_RELEASED,
)


@dataclass(frozen=True)
class Handled:
    """How one group handled one message: ``at_ms`` the time of the ``event`` that tells
    it (None when no stored event does), ``attempts`` the runs counted."""

    at_ms: int | None
    event: str | None
    attempts: int

    def as_dict(self) -> dict[str, Any]:
        return {"handled_at_ms": self.at_ms, "handled_event": self.event, "attempts": self.attempts}


@dataclass
class _Story:
    """What the key's events say about one (group, offset)."""

    offsets: set[int]  # the offset and the new offsets of its re-published replays
    dead_runs: list[int] = field(default_factory=list)  # attempts of each dead letter
    failures_since_dead: int = 0
    last_dead_ms: int | None = None
    parked_ms: int | None = None
    released_ms: int | None = None
    replayed_ms: int | None = None
    discarded_ms: int | None = None
    succeeded_ms: int | None = None

    def attempts(self, handled: bool) -> int:
        """The runs counted; ``handled``: with the one that handled it."""
        return sum(self.dead_runs) + self.failures_since_dead + int(handled)


def handled_times(
    topic: str, queue: int, key: str, shown: Iterable[tuple[str, int, int]]
) -> dict[tuple[str, int], Handled]:
    """For each ``(group, offset, produced_at_ms)`` of ``shown`` (messages of ``key`` in
    ``queue`` that the group has handled), when and in how many attempts."""
    wanted = list(shown)
    if not wanted:
        return {}
    stories = _stories(topic, queue, key, [(g, o) for g, o, _ in wanted])
    out: dict[tuple[str, int], Handled] = {}
    need_commit: dict[tuple[str, int], int] = {}
    for group, offset, produced_ms in wanted:
        story = stories[(group, offset)]
        told = _told_by_events(story)
        if told is None:
            need_commit[(group, offset)] = produced_ms
        else:
            ran = told[1] in (ev.REPLAY_SUCCEEDED, ev.KEY_RELEASED)
            out[(group, offset)] = Handled(told[0], told[1], story.attempts(ran))
    for target, committed_ms in _commits_past(topic, queue, need_commit).items():
        event = ev.OFFSET_COMMITTED if committed_ms is not None else None
        out[target] = Handled(committed_ms, event, stories[target].attempts(True))
    return out


def _told_by_events(s: _Story) -> tuple[int | None, str] | None:
    """The time and event the key's own events give; None: the commit tells."""
    if s.succeeded_ms is not None:
        return s.succeeded_ms, ev.REPLAY_SUCCEEDED
    if s.parked_ms is not None and s.last_dead_ms is None:
        return s.released_ms, ev.KEY_RELEASED
    if s.discarded_ms is not None:
        return s.discarded_ms, ev.DEAD_LETTER_DISCARDED
    if s.replayed_ms is not None:
        return s.replayed_ms, ev.DEAD_LETTER_REPLAYED
    if s.last_dead_ms is not None:
        return None, ev.DEAD_LETTERED  # moved on by its dead letter: no handled time
    return None


def _stories(
    topic: str, queue: int, key: str, targets: list[tuple[str, int]]
) -> dict[tuple[str, int], _Story]:
    stories = {t: _Story({t[1]}) for t in targets}
    newest = Event.objects.filter(topic=topic, key=key, queue=queue, type__in=KEY_TYPES).order_by(
        "-ts", "-id"
    )[:KEY_EVENTS]
    by_group: dict[str, list[_Story]] = defaultdict(list)
    for (group, _), story in stories.items():
        by_group[group].append(story)
    for e in reversed(list(newest)):
        for story in by_group.get(e.group, ()):
            _tell(story, e.type, to_ms(e.ts), e.details or {})
    return stories


def _tell(s: _Story, type_: str, ts_ms: int, d: dict[str, Any]) -> None:
    """Fold one event of the story's group and key into it (events oldest first)."""
    if type_ == ev.KEY_RELEASED:
        if s.parked_ms is not None and s.released_ms is None:
            s.released_ms = ts_ms
        return
    offsets = _offsets(type_, d)
    if not offsets & s.offsets:
        return
    if type_ == ev.CONSUME_FAILED:
        s.failures_since_dead += 1
    elif type_ == ev.DEAD_LETTERED:
        s.dead_runs.append((int_or_none(d.get("reconsume_times")) or 0) + 1)
        s.failures_since_dead, s.last_dead_ms = 0, ts_ms
        s.replayed_ms = s.discarded_ms = s.succeeded_ms = None
    elif type_ == ev.DEAD_LETTER_REPLAYED:
        s.replayed_ms = ts_ms
        new_offset = int_or_none(d.get("new_offset"))
        if new_offset is not None:
            s.offsets.add(new_offset)
    elif type_ == ev.DEAD_LETTER_DISCARDED:
        s.discarded_ms = ts_ms
    elif type_ == ev.REPLAY_SUCCEEDED:
        s.succeeded_ms = ts_ms
    elif type_ == ev.MESSAGES_PARKED:
        s.parked_ms, s.released_ms = ts_ms, None


def _offsets(type_: str, d: dict[str, Any]) -> set[int]:
    """The offsets an event names: ``offsets`` (retries, parking), ``offset``, and a
    replay's ``original_offset``."""
    named = d.get("offsets") if type_ in (ev.CONSUME_FAILED, ev.MESSAGES_PARKED) else None
    values = named if isinstance(named, list) else [d.get("offset"), d.get("original_offset")]
    return {o for o in (int_or_none(v) for v in values) if o is not None}


def _commits_past(
    topic: str, queue: int, wanted: dict[tuple[str, int], int]
) -> dict[tuple[str, int], int | None]:
    """For each (group, offset) -> produced_at_ms of ``wanted``, the time of the group's
    first commit event past the offset (None when none is stored within the walk).

    A group's committed offset only moves forward, so the first commit event in time whose
    ``offset`` is above the message's is the one whose range moved past it. The walk goes
    through the queue's commit events in time order from the oldest open message's produce
    time (less ``CLOCK_SKEW_MS``), jumping ahead whenever the next open message was produced
    later than the rows reached."""
    found: dict[tuple[str, int], int | None] = dict.fromkeys(wanted)
    open_: dict[str, list[int]] = defaultdict(list)  # group -> open offsets, sorted
    for group, offset in sorted(wanted):
        open_[group].append(offset)
    after: tuple[Any, int] | None = None
    for _ in range(COMMIT_READS):
        if not open_:
            break
        start = min(wanted[(g, o)] for g, offsets in open_.items() for o in offsets)
        rows = Event.objects.filter(
            type=ev.OFFSET_COMMITTED,
            topic=topic,
            queue=queue,
            group__in=list(open_),
            ts__gte=at(start - CLOCK_SKEW_MS),
        )
        if after is not None:
            rows = rows.filter(Q(ts__gt=after[0]) | Q(ts=after[0], id__gt=after[1]))
        chunk = list(
            rows.order_by("ts", "id").values_list("id", "group", "ts", "details")[:COMMIT_CHUNK]
        )
        for _id, group, ts, details in chunk:
            _passed(open_, found, group, int_or_none((details or {}).get("offset")), to_ms(ts))
        if len(chunk) < COMMIT_CHUNK:
            break
        after = (chunk[-1][2], chunk[-1][0])
    return found


def _passed(
    open_: dict[str, list[int]],
    found: dict[tuple[str, int], int | None],
    group: str,
    committed: int | None,
    ts_ms: int,
) -> None:
    """A commit of ``group`` to ``committed`` at ``ts_ms``: it moved past every open offset
    below it."""
    offsets = open_.get(group)
    if not offsets or committed is None:
        return
    passed = bisect.bisect_left(offsets, committed)
    for offset in offsets[:passed]:
        found[(group, offset)] = ts_ms
    del offsets[:passed]
    if not offsets:
        del open_[group]
