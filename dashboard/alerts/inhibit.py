"""Inhibition (docs/alerts.md, "Grouping and inhibition"): an alert that only repeats
what another alert already tells is kept (it opens, shows and resolves as any alert) but
not notified on its own, as Alertmanager's inhibit rules mute a target while a source
fires.

One inhibition, on purpose: a ``queue_stuck`` alert whose only reason is ``held_key``,
on a queue whose held keys are all already alerted as ``key_held`` (unresolved alerts of
the same topic, group and queue). The hold is the operator's to act on, and the
``key_held`` alerts name each key; the stuck alert would tell the same keys again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from lockstep.dashboard.alerts.models import RESOLVED, Alert

STUCK, HELD = "queue_stuck", "key_held"
# (topic, group, queue) -> the unresolved key_held alerts there.
HeldAlerts = dict[tuple[str, str, int | None], list[Alert]]


def only_held_keys(alert: Alert) -> bool:
    """True when ``alert`` is a ``queue_stuck`` whose every reason is a held key."""
    details = alert.details if isinstance(alert.details, dict) else {}
    return alert.rule == STUCK and list(details.get("reasons") or []) == ["held_key"]


def held_alerts(alerts: Iterable[Alert]) -> HeldAlerts:
    """The unresolved ``key_held`` alerts of the (topic, group)s of ``alerts``, by queue:
    one query, only when some alert could be inhibited."""
    wanted = {(a.topic, a.group) for a in alerts if only_held_keys(a)}
    found: HeldAlerts = defaultdict(list)
    if not wanted:
        return found
    topics = {t for t, _ in wanted}
    rows = Alert.objects.filter(rule=HELD, topic__in=topics).exclude(state=RESOLVED)
    for held in rows.order_by("opened_at", "id"):
        if (held.topic, held.group) in wanted:
            found[(held.topic, held.group, held.queue)].append(held)
    return found


def inhibitor(alert: Alert, held: HeldAlerts) -> Alert | None:
    """The ``key_held`` alert that already tells what ``alert`` would (the oldest of its
    queue's), or None when ``alert`` is to be told itself. A stuck queue whose held keys
    are not all alerted (a ``key_held`` rule switched off for the group, a key held
    longer than T but under the rule's threshold) is told as stuck."""
    if not only_held_keys(alert):
        return None
    alerted = held.get((alert.topic, alert.group, alert.queue), [])
    details = alert.details if isinstance(alert.details, dict) else {}
    named = set(details.get("keys") or [])
    count = int(details.get("held_keys") or len(named) or 1)
    keys = {a.key for a in alerted}
    if not alerted or not named <= keys or len(keys) < count:
        return None
    return alerted[0]
