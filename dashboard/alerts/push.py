"""Live alert pushes to the pages (the badge and the toasts) over the channel layer.

Group ``alerts``: ``{"type": "alerts.update", "counts": {"open", "acknowledged"},
"opened": [<brief>, ...], "resolved": [<brief alert>, ...]}`` after every change (an
evaluator tick that opened, told or resolved something, an acknowledgement). A brief
alert is ``{"id", "rule", "severity", "state", "summary", "url", "count"}``. ``opened``
holds one brief per (rule, topic, group), one toast each, as notifications are grouped
(docs/alerts-delivery.md, "Grouping"): the evaluator passes the alerts of the group
notifications it queued, and a group of several is its lead alert's brief with the group's
count, a summary naming the group and the first subjects, and the alerts page filtered to
the group as its ``url``. Pushes are hints: a socket also gets the counts when it
connects, and a lost push is corrected by the next one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

from django.db.models import Count
from django.urls import reverse

from lockstep.dashboard.alerts import payload
from lockstep.dashboard.alerts.models import ACKNOWLEDGED, OPEN, Alert
from lockstep.dashboard.web.publish import publish as publish_messages

log = logging.getLogger(__name__)

ALERTS_GROUP = "alerts"


def counts() -> dict[str, int]:
    """Unresolved alerts by state: ``{"open": n, "acknowledged": m}``."""
    rows = (
        Alert.objects.filter(state__in=(OPEN, ACKNOWLEDGED)).values("state").annotate(n=Count("id"))
    )
    found = {r["state"]: int(r["n"]) for r in rows}
    return {OPEN: found.get(OPEN, 0), ACKNOWLEDGED: found.get(ACKNOWLEDGED, 0)}


def brief(alert: Alert) -> dict[str, Any]:
    return {
        "id": alert.pk,
        "rule": alert.rule,
        "severity": alert.severity,
        "state": alert.state,
        "summary": alert.summary,
        "url": reverse("alert-detail", args=[alert.pk]),
        "count": 1,
    }


def group_brief(alerts: list[Alert]) -> dict[str, Any]:
    """One toast for ``alerts`` (one rule, topic and group; the first leads): the lead's
    brief, or for several the group's count, summary and filtered list."""
    lead = alerts[0]
    if len(alerts) == 1:
        return brief(lead)
    told = {"event": "opened", "group": payload.group_dict(lead, alerts, [])}
    query = {"rule": lead.rule, "topic": lead.topic, "group": lead.group}
    return {
        **brief(lead),
        "summary": payload.group_summary(told),
        "url": reverse("alerts") + "?" + urlencode(query),
        "count": len(alerts),
    }


def by_group(alerts: Iterable[Alert]) -> list[list[Alert]]:
    """``alerts`` split by (rule, topic, group), in the order each group first appears."""
    groups: dict[tuple[str, str, str], list[Alert]] = {}
    for alert in alerts:
        groups.setdefault(alert.group_key, []).append(alert)
    return list(groups.values())


def message(opened: Iterable[Alert] = (), resolved: Iterable[Alert] = ()) -> dict[str, Any]:
    return {
        "type": "alerts.update",
        "counts": counts(),
        "opened": [group_brief(g) for g in by_group(opened)],
        "resolved": [brief(a) for a in resolved],
    }


def publish(opened: Iterable[Alert] = (), resolved: Iterable[Alert] = ()) -> bool:
    """Send one update to every open page; False when it could not be sent: pages correct
    themselves with the next one (``web.publish``)."""
    try:
        update = message(opened, resolved)
    except Exception:  # the database: a hint, never let it stop the evaluator
        log.warning("alert push skipped", exc_info=True)
        return False
    return publish_messages([(ALERTS_GROUP, update)], "alert pushes") == 1
