"""Queries over the stored events that more than one feature needs: the conversions
between the runtime's epoch milliseconds and stored times, an event as the JSON views show
it, and since when a queue's lag samples have shown no progress (the *stuck* rule's
clock, docs/stuck.md). Every function here only reads the database."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db.models import BigIntegerField, Q
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from lockstep.dashboard.web.store.models import Event
from lockstep.workers import events as ev

# A queue counts as not moving only over lag samples this recent (older ones are pruned
# slowly and would make every long-idle queue look stuck for days).
STUCK_LOOKBACK_MS = 24 * 3_600_000


def at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000.0, tz=UTC)


def to_ms(when: datetime) -> int:
    return round(when.timestamp() * 1000)


def event_dict(event: Event) -> dict[str, Any]:
    """An event as the JSON views show it: ``Event.as_dict`` plus ``ts_ms``."""
    return {**event.as_dict(), "ts_ms": to_ms(event.ts)}


def not_moving_since(
    topic: str, group: str, queue: int, committed: int, now_ms: int, done: int | None = None
) -> int | None:
    """Since when (ms) the lag samples have shown no progress (docs/stuck.md): the
    committed offset ``committed`` and, when given, ``done`` (max offset - lag: the
    messages handled, so under key ordering offsets completed above the committed one
    count as progress), with a lag above zero, without a break: the time of the oldest
    sample of that newest unbroken run. ``None`` when the newest sample breaks it (or
    there are none)."""
    samples = Event.objects.filter(
        type=ev.LAG_SAMPLED,
        topic=topic,
        group=group,
        queue=queue,
        ts__gte=at(now_ms - STUCK_LOOKBACK_MS),
    )
    broke = ~Q(details__committed_offset=committed) | Q(details__lag__lte=0)
    if done is not None:
        samples = samples.annotate(
            done=Cast(KT("details__max_offset"), BigIntegerField())
            - Cast(KT("details__lag"), BigIntegerField())
        )
        broke |= ~Q(done=done)
    moved = samples.filter(broke).order_by("-ts", "-id").values_list("ts", flat=True).first()
    run = samples.filter(ts__gt=moved) if moved is not None else samples
    oldest = run.order_by("ts", "id").values_list("ts", flat=True).first()
    return to_ms(oldest) if oldest is not None else None
