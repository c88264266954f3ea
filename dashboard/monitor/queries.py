"""Read-side queries over the stored event log (``Event``) for the dashboard pages: rates,
lag history, lock-ownership timelines, the event feed and message histories.

Times in and out are epoch milliseconds (ints), like the runtime's own timestamps. Every
function here only reads the database; live state comes from Redis (``workers.inspect``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Max, Min, QuerySet

from lockstep.dashboard.web.store.models import Event
from lockstep.dashboard.web.store.queries import at, event_dict, to_ms
from lockstep.workers import events as ev

# Types an operator can pick in the feed: every name the runtime emits, and the marker the
# ingester stores where the event stream was trimmed before it could read it.
EVENT_TYPES = frozenset(
    value for name, value in vars(ev).items() if name.isupper() and isinstance(value, str)
) | {"events_lost"}
# Emitted every few seconds per queue: history for charts, noise in an event list.
NOISY_TYPES = (ev.LAG_SAMPLED, ev.KEY_STATE, ev.LANES)
# How a lock-ownership interval ends, by the event that ends it.
LOCK_ENDS = {
    ev.LOCK_RELEASED: "released",
    ev.LOCK_LOST: "lost",
    ev.LOCK_RENEW_FAILED: "renew_failed",
    ev.FENCING_REJECTED: "fenced",
}
# An event's ID: its stream entry ID, ``s<shard>:`` before it for a shard's entry
# (``workers.events.stored_id``), ``/<queue>`` after it for one queue's row of a batch of
# lag samples (``ingest_store.expand_samples``), or one the ingester made up for an event
# of its own (``lost:<stored ID>`` for the ``events_lost`` marker of a gap).
STREAM_ID = re.compile(r"^(?:[a-z_][a-z0-9_]{0,9}:){0,2}\d{1,20}-\d{1,20}(?:/\d{1,10})?$")


# ---- one consumer group ----------------------------------------------------------------


def latest_lanes(topic: str, group: str, consumers: Iterable[str]) -> list[dict[str, Any]]:
    """The newest ``lanes`` event of each of ``consumers`` in (topic, group): lane
    occupancy is reported only when it changes, so the newest one is the current one."""
    newest = (
        Event.objects.filter(type=ev.LANES, topic=topic, group=group, consumer__in=list(consumers))
        .values("consumer")
        .annotate(last=Max("id"))
        .values_list("last", flat=True)
    )
    return [
        {"consumer": e.consumer, "at_ms": to_ms(e.ts), **e.details}
        for e in Event.objects.filter(id__in=list(newest)).order_by("consumer")
    ]


# ---- one queue -------------------------------------------------------------------------


def queue_series(
    topic: str, queue: int, since_ms: int, max_points: int = 600
) -> dict[str, list[list[int | None]]]:
    """Per group, points ``[t_ms, max_offset, committed_offset, lag]`` in time order:
    ``lag_sampled`` gives all three, ``offset_committed`` only the committed offset (the
    others null). Thinned to at most ``max_points`` per group by keeping, per time
    bucket, the newest value of each field."""
    rows = (
        Event.objects.filter(
            topic=topic,
            queue=queue,
            ts__gte=at(since_ms),
            type__in=(ev.LAG_SAMPLED, ev.OFFSET_COMMITTED),
        )
        .order_by("ts", "id")
        .values_list("group", "type", "ts", "details")
    )
    series: dict[str, list[list[int | None]]] = defaultdict(list)
    for group, type_, ts, details in rows:
        if type_ == ev.LAG_SAMPLED:
            point = [
                to_ms(ts),
                int_or_none(details.get("max_offset")),
                int_or_none(details.get("committed_offset")),
                int_or_none(details.get("lag")),
            ]
        else:
            point = [to_ms(ts), None, int_or_none(details.get("offset")), None]
        series[group].append(point)
    return {group: _thin(points, since_ms, max_points) for group, points in series.items()}


def int_or_none(value: Any) -> int | None:
    """``value`` of stored event details as an int; None for what is none (a bool, text,
    a missing field)."""
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _thin(points: list[list[int | None]], since_ms: int, max_points: int) -> list[list[int | None]]:
    if len(points) <= max_points:
        return points
    end = int(points[-1][0] or since_ms)
    width = max(1, (end - since_ms) // max_points + 1)
    buckets: dict[int, list[int | None]] = {}
    for point in points:
        slot = (int(point[0] or 0) - since_ms) // width
        kept = buckets.get(slot)
        buckets[slot] = (
            point
            if kept is None
            else [
                point[0],
                *(
                    new if new is not None else old
                    for new, old in zip(point[1:], kept[1:], strict=True)
                ),
            ]
        )
    return [buckets[slot] for slot in sorted(buckets)]


@dataclass
class Interval:
    group: str
    consumer: str
    token: int | None
    start_ms: int
    end_ms: int | None = None
    end_reason: str = ""
    live: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "consumer": self.consumer,
            "token": self.token,
            "start_ms": self.start_ms,
            "end_ms": self.end_ms,
            "end_reason": self.end_reason or None,
            "live": self.live,
        }


def lock_timeline(
    topic: str, queue: int, since_ms: int, live_owners: dict[str, tuple[str, int]]
) -> list[dict[str, Any]]:
    """Lock ownership of one queue since ``since_ms``: one interval per grant (group,
    consumer, token), from its ``lock_acquired`` to the event that ended it (released,
    lost, renew_failed, fenced). A grant without such an event ends where the group's next
    grant starts ("superseded"); the newest one is ``live`` while ``live_owners`` (group
    -> (owner, token), from Redis) still shows it, else it ends unseen (``end_ms`` null,
    reason "no release seen": a killed consumer's lock simply expires). A grant made
    before ``since_ms`` and still held then is included with its real start."""
    kinds = (ev.LOCK_ACQUIRED, *LOCK_ENDS)
    found = list(
        Event.objects.filter(
            topic=topic, queue=queue, type__in=kinds, ts__gte=at(since_ms)
        ).order_by("ts", "id")
    )
    grants: dict[tuple[str, str, int | None], Interval] = {}
    for e in _held_at(topic, queue, since_ms) + found:
        ref = (e.group, e.consumer, e.token)
        if e.type == ev.LOCK_ACQUIRED:
            grants.setdefault(ref, Interval(e.group, e.consumer, e.token, to_ms(e.ts)))
            continue
        grant = grants.setdefault(ref, Interval(e.group, e.consumer, e.token, since_ms))
        if grant.end_ms is None:
            grant.end_ms, grant.end_reason = to_ms(e.ts), LOCK_ENDS[e.type]
    return [i.as_dict() for i in _close_open(list(grants.values()), live_owners)]


def _held_at(topic: str, queue: int, since_ms: int) -> list[Event]:
    """Each group's newest grant before ``since_ms`` that had not ended by then."""
    newest = (
        Event.objects.filter(type=ev.LOCK_ACQUIRED, topic=topic, queue=queue, ts__lt=at(since_ms))
        .values("group")
        .annotate(last=Max("id"))
        .values_list("last", flat=True)
    )
    held = []
    for grant in Event.objects.filter(id__in=list(newest)):
        ended = Event.objects.filter(
            topic=topic,
            queue=queue,
            group=grant.group,
            consumer=grant.consumer,
            token=grant.token,
            type__in=tuple(LOCK_ENDS),
            ts__gte=grant.ts,
            ts__lt=at(since_ms),
        ).exists()
        if not ended:
            held.append(grant)
    return held


def _close_open(grants: list[Interval], live_owners: dict[str, tuple[str, int]]) -> list[Interval]:
    grants.sort(key=lambda i: (i.start_ms, i.group))
    by_group: dict[str, list[Interval]] = defaultdict(list)
    for grant in grants:
        by_group[grant.group].append(grant)
    for group, chain in by_group.items():
        for grant, successor in zip(chain, [*chain[1:], None], strict=True):
            if grant.end_ms is not None:
                continue
            if successor is not None:
                grant.end_ms, grant.end_reason = successor.start_ms, "superseded"
            elif live_owners.get(group) == (grant.consumer, grant.token):
                grant.live = True
            else:
                grant.end_reason = "no release seen"
    return grants


def rebalances(topic: str, queue: int, since_ms: int) -> list[dict[str, Any]]:
    """Rebalances since ``since_ms`` that moved this queue to or from a consumer."""
    out = []
    for e in Event.objects.filter(type=ev.REBALANCE, topic=topic, ts__gte=at(since_ms)).order_by(
        "ts", "id"
    ):
        old, new = e.details.get("old") or [], e.details.get("new") or []
        if (queue in old) == (queue in new):
            continue
        out.append(
            {
                "at_ms": to_ms(e.ts),
                "group": e.group,
                "consumer": e.consumer,
                "change": "assigned" if queue in new else "revoked",
                "members": e.details.get("members") or [],
            }
        )
    return out


def recent_events(topic: str, queue: int, limit: int = 50) -> list[dict[str, Any]]:
    """The queue's newest events, newest first, without the periodic ones."""
    rows = (
        Event.objects.filter(topic=topic, queue=queue)
        .exclude(type__in=NOISY_TYPES)
        .order_by("-ts", "-id")[:limit]
    )
    return [event_dict(e) for e in rows]


# ---- the event feed --------------------------------------------------------------------


@dataclass(frozen=True)
class FeedFilter:
    topic: str = ""
    group: str = ""
    queue: int | None = None
    types: tuple[str, ...] = ()
    key: str = ""
    after: str = ""
    limit: int = 100
    # Leave out the periodic NOISY_TYPES (unless ``types`` names some): the events page's
    # default, so they do not bury the events an operator reads.
    hide_periodic: bool = False


@dataclass
class FeedPage:
    events: list[Event]
    has_more: bool
    cursor_found: bool


def event_feed(f: FeedFilter) -> FeedPage:
    """Events matching ``f``, oldest first. With ``after`` (a stored event's stream ID):
    the first ``limit`` events stored after it, so a poller never skips one. Without it,
    or when that event is not stored (pruned), the newest ``limit``."""
    rows = filtered_events(f)
    cursor = (
        Event.objects.filter(stream_id=f.after).values_list("id", flat=True).first()
        if f.after
        else None
    )
    if cursor is not None:
        page = list(rows.filter(id__gt=cursor).order_by("id")[: f.limit + 1])
        return FeedPage(page[: f.limit], len(page) > f.limit, True)
    newest = list(rows.order_by("-id")[: f.limit + 1])
    return FeedPage(newest[: f.limit][::-1], len(newest) > f.limit, not f.after)


def filtered_events(f: FeedFilter) -> QuerySet[Event]:
    """The stored events matching ``f``'s filters (not its cursor or limit)."""
    rows = Event.objects.all()
    if f.hide_periodic and not f.types:
        rows = rows.exclude(type__in=NOISY_TYPES)
    if f.topic:
        rows = rows.filter(topic=f.topic)
    if f.group:
        rows = rows.filter(group=f.group)
    if f.queue is not None:
        rows = rows.filter(queue=f.queue)
    if f.types:
        rows = rows.filter(type__in=f.types)
    if f.key:
        rows = rows.filter(key=f.key)
    return rows


# ---- message histories -----------------------------------------------------------------


def key_history(topic: str, key: str, limit: int = 200) -> list[dict[str, Any]]:
    """The newest ``limit`` events naming ``key`` in ``topic``, oldest first."""
    rows = Event.objects.filter(topic=topic, key=key).order_by("-ts", "-id")[:limit]
    return [event_dict(e) for e in reversed(rows)]


def offset_history(
    topic: str, queue: int, key: str, offset: int, limit: int = 200
) -> list[dict[str, Any]]:
    """Events about one message, oldest first: those of its key that name its offset
    (retries, dead letter, parking, replay) and, per group, the commit that moved past
    it."""
    named = [
        e
        for e in Event.objects.filter(topic=topic, queue=queue, key=key).order_by("-ts", "-id")[
            : limit * 5
        ]
        if _mentions(e.details, offset)
    ]
    first_past = (
        Event.objects.filter(
            type=ev.OFFSET_COMMITTED, topic=topic, queue=queue, details__offset__gt=offset
        )
        .values("group")
        .annotate(first=Min("id"))
        .values_list("first", flat=True)
    )
    passed = list(Event.objects.filter(id__in=list(first_past)))
    rows = sorted([*named[:limit], *passed], key=lambda e: (e.ts, e.id))
    return [event_dict(e) for e in rows]


def _mentions(details: dict[str, Any], offset: int) -> bool:
    if int_or_none(details.get("offset")) == offset:
        return True
    offsets = details.get("offsets")
    return isinstance(offsets, list) and offset in offsets
