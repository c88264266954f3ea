"""Grouping (docs/alerts-delivery.md, "Grouping"): alerts stay one per subject, but
notifications go per (rule, topic, group), as Alertmanager's ``group_by``, timed by its
three intervals:

- **group wait** (``LOCKSTEP_ALERT_GROUP_WAIT_SECONDS``, 30 s): a group with nothing told
  yet waits this long after its first alert before its first notification, so the rest
  of a storm (every queue of a dead group) joins it;
- **group interval** (``LOCKSTEP_ALERT_GROUP_INTERVAL_SECONDS``, 5 min): after a
  notification the group tells what changed (new alerts, resolutions) at most this
  often;
- **repeat interval** (``LOCKSTEP_ALERT_RENOTIFY_SECONDS``, 1 h): an open alert told
  this long ago makes its group notify again (at the group's next flush).

One notification lists every open (not acknowledged, not inhibited) alert of the group
and the resolutions not yet told; its channels, payload and timeline marks are
``notifications.deliver``'s. ``flush`` runs at the end of every evaluator tick.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q

from lockstep.dashboard.alerts import inhibit
from lockstep.dashboard.alerts.models import (
    OPEN,
    RESOLVED,
    Alert,
    AlertEvent,
    Delivery,
    NotificationGroup,
)
from lockstep.dashboard.alerts.notifications import active_silence, deliver, mark_silenced

log = logging.getLogger(__name__)

GroupKey = tuple[str, str, str]
INHIBITED = "inhibited"


def group_wait() -> timedelta:
    return timedelta(seconds=float(settings.LOCKSTEP_ALERT_GROUP_WAIT_SECONDS))


def group_interval() -> timedelta:
    return timedelta(seconds=float(settings.LOCKSTEP_ALERT_GROUP_INTERVAL_SECONDS))


def repeat_interval() -> timedelta:
    return timedelta(seconds=float(settings.LOCKSTEP_ALERT_RENOTIFY_SECONDS))


def sort_key(alert: Alert) -> tuple[bool, int, str, str, int]:
    """Alerts of a group in the order a notification lists them: by queue, key,
    consumer (queue 0, 1, 2, … reads as the storm it is)."""
    queue = alert.queue if alert.queue is not None else -1
    return (alert.queue is None, queue, alert.key, alert.consumer, alert.pk or 0)


@dataclass
class Notice:
    """One group notification a flush queued (to no channel when none is configured)."""

    key: GroupKey
    event: str
    firing: list[Alert] = field(default_factory=list)
    resolved: list[Alert] = field(default_factory=list)


@dataclass
class Pending:
    """What one group has to tell now: ``untold`` open alerts (new, woken, or held back
    by a silence), open alerts whose repeat interval passed, resolutions not told."""

    firing: list[Alert]
    untold: list[Alert]
    repeat: list[Alert]
    resolved: list[Alert]

    def __bool__(self) -> bool:
        return bool(self.untold or self.repeat or self.resolved)


def flush(now: datetime, refreshed: Mapping[int, Alert] | None = None) -> list[Notice]:
    """Queue the notifications due at ``now``: for each (rule, topic, group) with
    something to tell whose timer has run out, one notification (or, under a silence,
    none: the alerts stay untold and are told once it ends). Groups with nothing left
    unresolved lose their timer. ``refreshed``: alert id -> the alert as this tick's
    reading left it (``lifecycle.apply``), whose summary, details, offset and severity
    are told rather than the stored ones (stored durations may be a little older)."""
    candidates = Alert.objects.filter(Q(state=OPEN) | Q(resolution_pending=True))
    groups: dict[GroupKey, list[Alert]] = defaultdict(list)
    for alert in candidates:
        groups[alert.group_key].append(_as_read(alert, refreshed or {}))
    held = inhibit.held_alerts(a for alerts in groups.values() for a in alerts)
    notices = []
    for key in sorted(groups):
        notice = _flush_group(key, sorted(groups[key], key=sort_key), held, now)
        if notice is not None:
            notices.append(notice)
    _forget_finished()
    return notices


def _as_read(alert: Alert, refreshed: Mapping[int, Alert]) -> Alert:
    """``alert`` with what this tick's reading says of it (``refreshed``), if any."""
    fresh = refreshed.get(alert.pk)
    if fresh is not None:
        alert.summary, alert.details = fresh.summary, fresh.details
        alert.offset, alert.severity = fresh.offset, fresh.severity
    return alert


def pending(alerts: Iterable[Alert], held: inhibit.HeldAlerts, now: datetime) -> Pending:
    """Split one group's candidate alerts; inhibited ones are left out (and marked on
    their timelines once)."""
    due = now - repeat_interval()
    firing: list[tuple[Alert, Alert | None]] = []
    muted: list[tuple[Alert, Alert | None]] = []
    resolved: list[Alert] = []
    for a in alerts:
        if a.resolution_pending:
            resolved.append(a)
        elif a.state == OPEN:
            source = inhibit.inhibitor(a, held)
            (muted if source is not None else firing).append((a, source))
    _mark_inhibited(muted, now)
    open_alerts = [a for a, _ in firing]
    return Pending(
        firing=open_alerts,
        untold=[a for a in open_alerts if a.last_notified_at is None],
        repeat=[a for a in open_alerts if a.last_notified_at and a.last_notified_at <= due],
        resolved=resolved,
    )


def _flush_group(
    key: GroupKey, alerts: list[Alert], held: inhibit.HeldAlerts, now: datetime
) -> Notice | None:
    todo = pending(alerts, held, now)
    if not todo:
        return None
    timer = _timer(key, now)
    if now < timer.flush_at:
        return None  # the group wait or interval: the rest of the storm may still join
    event = _event(todo, timer)
    lead = (todo.untold or todo.repeat or todo.resolved)[0]
    silence = active_silence(lead, now)
    if silence is not None:
        mark_silenced([*todo.untold, *todo.repeat, *todo.resolved], silence, event, now)
        # A resolution under a silence is never told (the silence says so); open
        # alerts stay untold and are told when it ends.
        Alert.objects.filter(pk__in=[a.pk for a in todo.resolved]).update(resolution_pending=False)
        timer.flushed_at = now
        timer.save(update_fields=["flushed_at"])
        return None
    firing = todo.firing if event != Delivery.RESOLVED else []
    deliver(event, firing, todo.resolved, now)
    timer.flushed_at, timer.flush_at = now, now + group_interval()
    timer.save(update_fields=["flushed_at", "flush_at"])
    log.warning(
        "alert group %s: %s, %d firing, %d resolved",
        "/".join(key),
        event,
        len(firing),
        len(todo.resolved),
    )
    return Notice(key, event, firing, todo.resolved)


def _event(todo: Pending, timer: NotificationGroup) -> str:
    """``opened`` when an untold alert opened since the group was last due (a new alert,
    not one a silence or a snooze held back), ``renotify`` for the rest of what is
    firing, ``resolved`` when only resolutions are left to tell."""
    if todo.untold:
        fresh = timer.flushed_at is None or any(a.opened_at > timer.flushed_at for a in todo.untold)
        return Delivery.OPENED if fresh else Delivery.RENOTIFY
    return Delivery.RENOTIFY if todo.repeat else Delivery.RESOLVED


def _timer(key: GroupKey, now: datetime) -> NotificationGroup:
    """The group's timer; a new one is due a group wait from ``now``."""
    rule, topic, group = key
    fields = {"rule": rule, "topic": topic, "group": group}
    found = NotificationGroup.objects.filter(**fields).first()
    if found is not None:
        return found
    try:
        with transaction.atomic():
            return NotificationGroup.objects.create(**fields, flush_at=now + group_wait())
    except IntegrityError:  # made meanwhile (a second evaluator taking over): use it
        return NotificationGroup.objects.get(**fields)


def _mark_inhibited(muted: list[tuple[Alert, Alert | None]], now: datetime) -> None:
    """An ``inhibited`` timeline event on each muted alert, once per alert."""
    if not muted:
        return
    marked = set(
        AlertEvent.objects.filter(alert__in=[a for a, _ in muted], kind=INHIBITED).values_list(
            "alert_id", flat=True
        )
    )
    AlertEvent.objects.bulk_create(
        AlertEvent(
            alert=a,
            at=now,
            kind=INHIBITED,
            note=f"not notified on its own: its held keys are alerted by #{source.pk} "
            f"(key held: {source.subject_text})",
            details={"inhibited_by": source.pk},
        )
        for a, source in muted
        if source is not None and a.pk not in marked
    )


def _forget_finished() -> None:
    """Delete the timers of groups with no unresolved alert and no resolution to tell."""
    alive = set(
        Alert.objects.filter(~Q(state=RESOLVED) | Q(resolution_pending=True))
        .order_by()  # no ordering columns in the DISTINCT
        .values_list("rule", "topic", "group")
        .distinct()
    )
    done = [
        t.pk for t in NotificationGroup.objects.all() if (t.rule, t.topic, t.group) not in alive
    ]
    if done:
        NotificationGroup.objects.filter(pk__in=done).delete()
