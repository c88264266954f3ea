"""The notification payload (docs/alerts.md, "Payload"): what webhooks receive as JSON,
and what every other channel formats its message from.

``{"version": 1, "event": "opened" | "renotify" | "resolved" | "test", "sent_at": ISO
time, "alert": {"id", "rule", "severity", "state", "summary", "topic", "group", "queue",
"key", "consumer", "offset", "details", "since", "opened_at", "resolved_at",
"duration_s", "acknowledged_by", "url", "queue_url", "dead_letters_url"}, "group": {"rule",
"topic", "group", "count", "alerts", "more", "resolved_count", "resolved", "resolved_more",
"url"}}``. ``alert`` is the notification's lead (the first it lists); ``group`` is every
alert of its (rule, topic, group) it tells of: how many are firing (``count``) and the
first ``LISTED`` of them, how many more, and the same for the resolutions it tells. A
test has no ``group``. Times are ISO 8601 in UTC; links are absolute when
``LOCKSTEP_BASE_URL`` is set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from lockstep.dashboard.alerts import text
from lockstep.dashboard.alerts.models import Alert

VERSION = 1
# A notification names this many alerts of its group and counts the rest: the first ten
# queues of a storm of 1,024 say which group and where, a mail stays readable.
LISTED = 10


def absolute(path: str) -> str:
    return str(settings.LOCKSTEP_BASE_URL).rstrip("/") + path


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def links(alert: Alert) -> dict[str, str | None]:
    """The alert's page, its queue's page and its group's dead letters (absolute)."""
    out: dict[str, str | None] = {"url": None, "queue_url": None, "dead_letters_url": None}
    try:
        out["url"] = absolute(reverse("alert-detail", args=[alert.pk]))
        if alert.topic and alert.queue is not None:
            out["queue_url"] = absolute(reverse("queue", args=[alert.topic, alert.queue]))
        if alert.topic and alert.group:
            query = {"topic": alert.topic}
            if alert.queue is not None:
                query["queue"] = str(alert.queue)
            if alert.key:
                query["key"] = alert.key
            out["dead_letters_url"] = absolute(
                reverse("dead-letters", args=[alert.group]) + "?" + urlencode(query)
            )
    except NoReverseMatch:  # pages not installed (a worker-only deployment)
        pass
    return out


def alert_dict(alert: Alert) -> dict[str, Any]:
    return {
        "id": alert.pk,
        "rule": alert.rule,
        "severity": alert.severity,
        "state": alert.state,
        "summary": alert.summary,
        **alert.subject(),
        "details": alert.details,
        "since": _iso(alert.since),
        "opened_at": _iso(alert.opened_at),
        "resolved_at": _iso(alert.resolved_at),
        "duration_s": round(alert.duration_s, 1),
        "acknowledged_by": alert.acknowledged_by,
        **links(alert),
    }


def build(
    alert: Alert | None,
    event: str,
    firing: Sequence[Alert] | None = None,
    resolved: Sequence[Alert] | None = None,
) -> dict[str, Any]:
    """The payload of ``event`` for ``alert`` (``None`` for a channel test: a made-up
    alert that says so). ``firing`` and ``resolved``: the alerts of ``alert``'s group the
    notification tells of (default: ``alert`` alone, firing or, for a ``resolved``
    event, resolved)."""
    out: dict[str, Any] = {
        "version": VERSION,
        "event": event,
        "sent_at": timezone.now().isoformat(),
        "alert": alert_dict(alert) if alert is not None else test_alert(),
    }
    if alert is not None:
        if firing is None and resolved is None:
            alone = [alert]
            firing, resolved = ([], alone) if event == "resolved" else (alone, [])
        out["group"] = group_dict(alert, firing or [], resolved or [])
    return out


def item(alert: Alert) -> dict[str, Any]:
    """One alert as a group lists it: its subject, summary and page."""
    return {
        "id": alert.pk,
        "queue": alert.queue,
        "key": alert.key,
        "consumer": alert.consumer,
        "offset": alert.offset,
        "summary": alert.summary,
        "url": links(alert)["url"],
    }


def group_url(alert: Alert) -> str | None:
    """The alerts page filtered to ``alert``'s group (absolute)."""
    query = {"rule": alert.rule, "topic": alert.topic, "group": alert.group, "state": "all"}
    try:
        return absolute(reverse("alerts") + "?" + urlencode(query))
    except NoReverseMatch:  # pages not installed
        return None


def group_dict(lead: Alert, firing: Sequence[Alert], resolved: Sequence[Alert]) -> dict[str, Any]:
    return {
        "rule": lead.rule,
        "topic": lead.topic,
        "group": lead.group,
        "count": len(firing),
        "alerts": [item(a) for a in firing[:LISTED]],
        "more": max(0, len(firing) - LISTED),
        "resolved_count": len(resolved),
        "resolved": [item(a) for a in resolved[:LISTED]],
        "resolved_more": max(0, len(resolved) - LISTED),
        "url": group_url(lead),
    }


def test_alert() -> dict[str, Any]:
    now = timezone.now().isoformat()
    return {
        "id": None,
        "rule": "test",
        "severity": "warning",
        "state": "open",
        "summary": "Test notification from Lockstep: this channel works.",
        "topic": "",
        "group": "",
        "queue": None,
        "key": "",
        "consumer": "",
        "offset": None,
        "details": {},
        "since": now,
        "opened_at": now,
        "resolved_at": None,
        "duration_s": 0.0,
        "acknowledged_by": "",
        "url": None,
        "queue_url": None,
        "dead_letters_url": None,
    }


def headline(payload: dict[str, Any]) -> str:
    """One line for a subject or a chat message: ``[RESOLVED] queue_stuck: ...``; for
    a notification of several alerts, the group, the count and the first subjects
    (``orders / mailer: 24 alerts (queues 0, 1, …, 9 and 14 more)``)."""
    a = payload["alert"]
    tag = {"opened": "ALERT", "renotify": "STILL OPEN", "resolved": "RESOLVED"}.get(
        payload["event"], payload["event"].upper()
    )
    return f"[{tag}] {a['rule']} ({a['severity']}): {group_summary(payload) or a['summary']}"


def told(payload: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """The alerts the notification is about (the resolved ones for a ``resolved``
    event, else the firing ones), as listed, and how many there are."""
    g = payload.get("group") or {}
    if payload["event"] == "resolved":
        return list(g.get("resolved") or []), int(g.get("resolved_count") or 0)
    return list(g.get("alerts") or []), int(g.get("count") or 0)


def group_summary(payload: dict[str, Any]) -> str:
    """``orders / mailer: 24 alerts (queues 0, 1, …, 9 and 14 more)``, or "" when the
    notification tells of one alert (its own summary says it best)."""
    listed, count = told(payload)
    if count <= 1:
        return ""
    g = payload["group"]
    where = text.subject(g["topic"], g["group"]) or "Lockstep"
    more = count - len(listed)
    return f"{where}: {count} alerts ({subjects(listed)}{f' and {more} more' if more else ''})"


def subjects(items: Sequence[dict[str, Any]]) -> str:
    """``queues 0, 1, 2`` when every item is a whole queue, else ``queue 3 / key k,
    consumer c-1``."""
    if items and all(i["queue"] is not None and not i["key"] and not i["consumer"] for i in items):
        return (
            "queue" + ("s " if len(items) > 1 else " ") + ", ".join(str(i["queue"]) for i in items)
        )
    return ", ".join(subject(i) for i in items)


def subject(item: dict[str, Any]) -> str:
    """``queue 3 / key k``: a listed alert's subject within its group, as the pages write
    it; ``#7`` when it has none."""
    found = text.subject("", "", item["queue"], item["key"], item["consumer"])
    return found or f"#{item['id']}"
