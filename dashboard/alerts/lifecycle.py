"""The alert lifecycle (docs/alerts.md, "Lifecycle").

- A firing subject without an unresolved alert opens one (``opened``).
- While it keeps firing, the alert's summary and details follow the live state: the row
  is rewritten at the tick any figure it states changes (durations alone: every
  ``SEEN_EVERY``), and a notification tells the figures of the tick it is queued at
  (``grouping.flush`` is given the refreshed alerts). The ``opened`` timeline event
  keeps the summary at opening and says so ("at opening: …"). An ``open``
  (unacknowledged) alert re-notifies every ``LOCKSTEP_ALERT_RENOTIFY_SECONDS``.
- Notifications are not sent per alert: ``grouping.flush`` (the last step of ``apply``)
  tells each (rule, topic, group) in one notification, after its group wait or group
  interval (docs/alerts-delivery.md, "Grouping"), leaving out inhibited alerts
  (``inhibit``).
- An operator acknowledges it (who, a note), optionally snoozed until a time: no more
  re-notifications; when a snooze ends and the alert still fires it is ``open`` again
  (``woke``) and notifies.
- When its subject no longer fires it resolves by itself (``resolved_at``, the duration
  kept) and channels that were told it opened are told it resolved (with its group's
  next notification). Its summary is then
  rewritten to say how long the condition held (``resolved_at - since``) and its final
  state (``Rule.resolution``), never the state last seen while open. The condition
  returning later opens a new alert.
- Silences mute notifications (not the alert) of matching alerts while active.

Every change is an ``AlertEvent`` on the alert's timeline. Only the evaluator opens and
resolves; people acknowledge, snooze and unacknowledge (``acknowledge``, ``unacknowledge``).
``notify`` tells one alert at once, ungrouped (what the delivery tests drive).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from lockstep.dashboard.alerts import grouping
from lockstep.dashboard.alerts.models import (
    ACKNOWLEDGED,
    OPEN,
    RESOLVED,
    Alert,
    AlertEvent,
    Delivery,
)
from lockstep.dashboard.alerts.notifications import active_silence, deliver, mark_silenced
from lockstep.dashboard.alerts.rules import RULES, Finding, Resolution
from lockstep.dashboard.alerts.text import duration, without_durations
from lockstep.dashboard.web.store.queries import at

log = logging.getLogger(__name__)

# A firing alert's row is rewritten when a figure it states changed, else (its durations,
# which change every tick) at most this often (``last_seen_at``): one write per alert per
# tick would keep SQLite busy for nothing.
SEEN_EVERY = timedelta(seconds=30)


@dataclass
class Changes:
    """What one ``apply`` did, for the live pushes and the log: ``told`` are the group
    notifications queued (the toasts follow them), ``notified`` their firing alerts."""

    opened: list[Alert] = field(default_factory=list)
    resolved: list[Alert] = field(default_factory=list)
    updated: list[Alert] = field(default_factory=list)
    notified: list[Alert] = field(default_factory=list)
    told: list[grouping.Notice] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.opened or self.resolved or self.updated or self.notified or self.told)


def unresolved() -> dict[str, Alert]:
    return {a.fingerprint: a for a in Alert.objects.exclude(state=RESOLVED)}


# An alert -> its final state, asked when it resolves (the evaluator asks its rule).
Finals = Callable[[Alert], Resolution]


def apply(
    findings: Iterable[Finding], evaluated: set[str], now: datetime, finals: Finals | None = None
) -> Changes:
    """Bring the alerts in line with ``findings`` (every subject firing now) of the rules
    named in ``evaluated`` (a rule that failed this tick neither opens nor resolves).
    ``finals`` says what a resolving alert's final state is (default: the condition
    cleared). Then the notifications due are queued, per group (``grouping.flush``)."""
    changes = Changes()
    current = unresolved()
    firing: dict[str, Finding] = {}
    refreshed: dict[int, Alert] = {}
    for f in findings:
        firing.setdefault(f.fingerprint, f)
    for fingerprint, finding in firing.items():
        alert = current.get(fingerprint)
        if alert is None:
            opened = _open(finding, now)
            if opened is not None:
                changes.opened.append(opened)
            continue
        if _refresh(alert, finding, now):
            changes.updated.append(alert)
        refreshed[alert.pk] = alert
    for fingerprint, alert in current.items():
        if fingerprint not in firing and alert.rule in evaluated:
            resolve(alert, now, finals(alert) if finals is not None else None)
            changes.resolved.append(alert)
    wake_snoozed(now)
    changes.told = grouping.flush(now, refreshed)
    _store_told(changes.told, refreshed, now)
    changes.notified = [a for notice in changes.told for a in notice.firing]
    return changes


def _open(finding: Finding, now: datetime) -> Alert | None:
    alert = Alert(
        rule=finding.rule,
        fingerprint=finding.fingerprint,
        severity=finding.severity,
        state=OPEN,
        topic=finding.topic,
        group=finding.group,
        queue=finding.queue,
        key=finding.key,
        consumer=finding.consumer,
        offset=finding.offset,
        summary=finding.summary,
        details=dict(finding.details),
        since=at(finding.since_ms),
        opened_at=now,
        last_seen_at=now,
    )
    try:
        with transaction.atomic():
            alert.save()
            AlertEvent.objects.create(
                alert=alert,
                at=now,
                kind=AlertEvent.OPENED,
                # A timeline event keeps what was true then: it says so.
                note=f"at opening: {finding.summary}",
                details={"condition_since": alert.since.isoformat()},
            )
    except IntegrityError:  # another evaluator opened it first: one alert per subject
        log.warning("alert %s already open; not opening it twice", finding.fingerprint)
        return None
    log.warning("alert opened: #%s %s", alert.pk, finding.summary)
    return alert


def _refresh(alert: Alert, finding: Finding, now: datetime) -> bool:
    """Follow the live state; True when what the alert says changed: any figure of its
    summary or details but durations (which change every tick and only count at the
    ``SEEN_EVERY`` rewrite). The alert in memory always holds this tick's figures."""
    said = _lasting(alert)
    alert.summary = finding.summary
    alert.offset = finding.offset
    alert.severity = finding.severity
    alert.details = dict(finding.details)
    changed = said != _lasting(alert)
    if changed or now - alert.last_seen_at >= SEEN_EVERY:
        _store(alert, now)
    return changed


def _store(alert: Alert, now: datetime) -> None:
    alert.last_seen_at = now
    alert.save(update_fields=["summary", "offset", "severity", "details", "last_seen_at"])


def _lasting(alert: Alert) -> tuple[object, ...]:
    """What ``alert`` says, durations left out (``*_s`` details, durations in words)."""
    details = alert.details if isinstance(alert.details, dict) else {}
    return (
        alert.offset,
        alert.severity,
        without_durations(alert.summary),
        {k: v for k, v in details.items() if not k.endswith("_s")},
    )


def _store_told(told: list[grouping.Notice], refreshed: dict[int, Alert], now: datetime) -> None:
    """The firing alerts just told are stored with the figures they were told with, so
    their pages say what the notification said."""
    for notice in told:
        for alert in notice.firing:
            fresh = refreshed.get(alert.pk)
            if fresh is not None and fresh.last_seen_at != now:
                _store(fresh, now)


def resolve(alert: Alert, now: datetime, final: Resolution | None = None) -> None:
    """Resolve ``alert`` at ``now``: its summary and details say how long the condition
    held and ``final`` (its state now)."""
    final = final or Resolution("the condition cleared")
    held_s = max(0.0, (now - alert.since).total_seconds())
    alert.state = RESOLVED
    alert.resolved_at = now
    # Told with the group's next notification, to the channels told of it opening.
    alert.resolution_pending = alert.notifications > 0
    alert.summary = resolved_summary(alert, held_s, final)
    details = dict(alert.details) if isinstance(alert.details, dict) else {}
    details.update(final.details)
    if "for_s" in details:
        details["for_s"] = round(held_s, 1)
    alert.details = details
    with transaction.atomic():
        alert.save(
            update_fields=["state", "resolved_at", "summary", "details", "resolution_pending"]
        )
        AlertEvent.objects.create(
            alert=alert,
            at=now,
            kind=AlertEvent.RESOLVED,
            note=final.state,
            details={"duration_s": round(alert.duration_s, 1), "held_s": round(held_s, 1)},
        )
    log.warning("alert resolved: #%s %s after %.0f s", alert.pk, alert.rule, alert.duration_s)


def subject_text(alert: Alert) -> str:
    """``orders / billing / queue 3 / key order-7``: the alert's subject as the pages
    write it."""
    return alert.subject_text or "Lockstep"


def resolved_summary(alert: Alert, held_s: float, final: Resolution) -> str:
    """The summary of a resolved alert: what it was (its rule's description), how long
    the condition held (``resolved_at - since``) and its final state."""
    rule = RULES.get(alert.rule)
    what = rule.description.rstrip(".") if rule else alert.rule
    return (
        f"{subject_text(alert)}: resolved after {duration(held_s)} "
        f"(condition since {alert.since:%Y-%m-%d %H:%M:%S} UTC): {final.state}. "
        f"It was: {what[:1].lower()}{what[1:]}."
    )


def wake_snoozed(now: datetime) -> list[Alert]:
    """Acknowledged alerts whose snooze ended are woken: ``open`` again and untold, so
    their group tells them at its next flush."""
    woken = list(Alert.objects.filter(state=ACKNOWLEDGED, snoozed_until__lte=now))
    for alert in woken:
        alert.state = OPEN
        alert.snoozed_until = None
        alert.last_notified_at = None  # told again at once
        with transaction.atomic():
            alert.save(update_fields=["state", "snoozed_until", "last_notified_at"])
            AlertEvent.objects.create(
                alert=alert, at=now, kind=AlertEvent.WOKE, note="the snooze ended"
            )
    return woken


def notify(alert: Alert, event: str, now: datetime) -> list[Delivery]:
    """Queue ``event`` of ``alert`` alone, at once, for every channel that wants it (the
    dispatcher sends them), unless a silence mutes it; the evaluator notifies per group
    instead (``grouping.flush``). A resolution goes only to channels that were told of
    the alert and send resolutions."""
    silence = active_silence(alert, now)
    if silence is not None:
        mark_silenced([alert], silence, event, now)
        return []
    if event == Delivery.RESOLVED:
        return deliver(event, [], [alert], now)
    return deliver(event, [alert], [], now)


def acknowledge(
    alert: Alert, actor: str, note: str = "", snooze_until: datetime | None = None
) -> None:
    """An operator takes the alert: no re-notifications (until ``snooze_until``, when
    given: then it is open again if it still fires). A resolved alert cannot be
    acknowledged (``ValueError``)."""
    if alert.state == RESOLVED:
        raise ValueError("this alert is resolved; there is nothing to acknowledge")
    now = timezone.now()
    if snooze_until is not None and snooze_until <= now:
        raise ValueError("the snooze must end in the future")
    alert.state = ACKNOWLEDGED
    alert.acknowledged_by = actor
    alert.acknowledged_at = now
    alert.ack_note = note
    alert.snoozed_until = snooze_until
    kind = AlertEvent.SNOOZED if snooze_until else AlertEvent.ACKNOWLEDGED
    with transaction.atomic():
        alert.save(
            update_fields=[
                "state",
                "acknowledged_by",
                "acknowledged_at",
                "ack_note",
                "snoozed_until",
            ]
        )
        AlertEvent.objects.create(
            alert=alert,
            at=now,
            kind=kind,
            actor=actor,
            note=note,
            details={"snoozed_until": snooze_until.isoformat()} if snooze_until else {},
        )


def unacknowledge(alert: Alert, actor: str, note: str = "") -> None:
    """Back to ``open`` (re-notifications resume). Only an acknowledged alert."""
    if alert.state != ACKNOWLEDGED:
        raise ValueError(f"this alert is {alert.state}, not acknowledged")
    alert.state = OPEN
    alert.snoozed_until = None
    with transaction.atomic():
        alert.save(update_fields=["state", "snoozed_until"])
        AlertEvent.objects.create(
            alert=alert, at=timezone.now(), kind=AlertEvent.UNACKNOWLEDGED, actor=actor, note=note
        )
