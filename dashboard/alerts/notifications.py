"""Queueing one notification: a ``Delivery`` per channel that wants it, naming every
alert it tells of, and the ``notified`` (or ``silenced``) marks on their timelines. What
to tell and when is decided before (``grouping.flush`` for the evaluator,
``lifecycle.notify`` for one alert at once); the dispatcher sends (``dispatch``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import transaction
from django.db.models import F, Q

from lockstep.dashboard.alerts import payload
from lockstep.dashboard.alerts.models import Alert, AlertEvent, Channel, Delivery, Silence


def active_silence(alert: Alert, now: datetime) -> Silence | None:
    """The first silence active at ``now`` that matches ``alert`` (and so every alert of
    its group: silences match on rule, topic and group, what notifications group by)."""
    for silence in Silence.objects.filter(starts_at__lte=now, ends_at__gt=now):
        if silence.matches(alert):
            return silence
    return None


def mark_silenced(alerts: Sequence[Alert], silence: Silence, event: str, now: datetime) -> None:
    """A ``silenced`` timeline event on each of ``alerts`` not yet marked for this
    silence: once per alert and silence, however many ticks it mutes them."""
    marked = set(
        AlertEvent.objects.filter(
            alert__in=alerts, kind=AlertEvent.SILENCED, details__silence=silence.pk
        ).values_list("alert_id", flat=True)
    )
    AlertEvent.objects.bulk_create(
        AlertEvent(
            alert=a,
            at=now,
            kind=AlertEvent.SILENCED,
            note=str(silence),
            details={"silence": silence.pk, "event": event},
        )
        for a in alerts
        if a.pk not in marked
    )


def channels_for(lead: Alert, event: str, resolved: Sequence[Alert]) -> list[Channel]:
    """Enabled channels that want the group's alerts; for a resolution only those that
    send resolutions and were told of one of the ``resolved`` alerts."""
    channels = [c for c in Channel.objects.filter(enabled=True) if c.wants(lead)]
    if event != Delivery.RESOLVED:
        return channels
    told = set(
        Delivery.objects.filter(Q(alert__in=resolved) | Q(alerts__in=resolved)).values_list(
            "channel_id", flat=True
        )
    )
    return [c for c in channels if c.send_resolved and c.pk in told]


def deliver(
    event: str,
    firing: Sequence[Alert],
    resolved: Sequence[Alert],
    now: datetime,
) -> list[Delivery]:
    """Queue one notification of ``event`` telling ``firing`` (told now: their
    ``last_notified_at`` and ``notifications`` move) and ``resolved`` (their pending
    resolution is told: ``resolution_pending`` cleared) to every channel that wants it.
    Every alert is of one (rule, topic, group); the first of ``firing`` (else of
    ``resolved``) leads. Silences are the caller's to check."""
    lead = (list(firing) or list(resolved))[0]
    channels = channels_for(lead, event, resolved)
    body = payload.build(lead, event, firing=firing, resolved=resolved)
    told = [*firing, *resolved]
    names = [c.name for c in channels]
    with transaction.atomic():
        deliveries = Delivery.objects.bulk_create(
            Delivery(alert=lead, channel=c, event=event, payload=body, next_attempt_at=now)
            for c in channels
        )
        Delivery.alerts.through.objects.bulk_create(
            Delivery.alerts.through(delivery_id=d.pk, alert_id=a.pk)
            for d in deliveries
            for a in told
        )
        if firing:
            Alert.objects.filter(pk__in=[a.pk for a in firing]).update(
                last_notified_at=now, notifications=F("notifications") + 1
            )
        if resolved:
            Alert.objects.filter(pk__in=[a.pk for a in resolved]).update(resolution_pending=False)
        if channels or event != Delivery.RESOLVED:
            note = f"{event}: " + (", ".join(names) or "no channel configured")
            if len(told) > 1:
                note += f" (one notification for {len(told)} alerts of the group)"
            AlertEvent.objects.bulk_create(
                AlertEvent(
                    alert=a,
                    at=now,
                    kind=AlertEvent.NOTIFIED,
                    note=note,
                    details={"event": event, "channels": names, "group_size": len(told)},
                )
                for a in told
            )
    for a in firing:  # the rows were updated in bulk; keep the callers' objects in line
        a.last_notified_at, a.notifications = now, a.notifications + 1
    for a in resolved:
        a.resolution_pending = False
    return deliveries
