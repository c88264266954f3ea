"""The notification payload (docs/alerts.md, "Payload"): what webhooks receive as JSON,
and what every other channel formats its message from.

``{"version": 1, "event": "opened" | "renotify" | "resolved" | "test", "sent_at": ISO
time, "alert": {"id", "rule", "severity", "state", "summary", "topic", "group", "queue",
"key", "consumer", "offset", "details", "since", "opened_at", "resolved_at",
"duration_s", "acknowledged_by", "url", "queue_url", "dead_letters_url"}}``. Times are
ISO 8601 in UTC; links are absolute when ``LOCKSTEP_BASE_URL`` is set.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from lockstep.dashboard.alerts.models import Alert

VERSION = 1


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


def build(alert: Alert | None, event: str) -> dict[str, Any]:
    """The payload of ``event`` for ``alert`` (``None`` for a channel test: a made-up
    alert that says so)."""
    body = alert_dict(alert) if alert is not None else test_alert()
    return {
        "version": VERSION,
        "event": event,
        "sent_at": timezone.now().isoformat(),
        "alert": body,
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
    """One line for a subject or a chat message: ``[RESOLVED] queue_stuck: ...``."""
    a = payload["alert"]
    tag = {"opened": "ALERT", "renotify": "STILL OPEN", "resolved": "RESOLVED"}.get(
        payload["event"], payload["event"].upper()
    )
    return f"[{tag}] {a['rule']} ({a['severity']}): {a['summary']}"
