"""What every channel kind implements, and the plain-text message they share."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from lockstep.dashboard.alerts import payload as payloads
from lockstep.dashboard.alerts.models import Channel
from lockstep.dashboard.alerts.text import detail_rows, duration, subject


class DeliveryError(Exception):
    """A send that did not succeed. ``retryable``: the same send may work later (the
    receiver was down, busy or slow); otherwise it never will as configured (a bad
    address, a URL that does not exist) and the delivery fails at once."""

    def __init__(self, message: str, retryable: bool) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable


class ChannelKind(ABC):
    """One way of notifying. ``name`` is the ``Channel.kind`` value, ``label`` what the
    UI shows."""

    name: ClassVar[str]
    label: ClassVar[str]

    @classmethod
    @abstractmethod
    def validate(cls, target: str, secret: str, format: str) -> None:
        """``ValueError`` with a message a person can act on when a channel of this kind
        with these fields could never send."""

    @abstractmethod
    def send(self, channel: Channel, payload: dict[str, Any], delivery_id: int | None) -> None:
        """Send ``payload`` (``dashboard.alerts.payload``) once; ``DeliveryError`` when it
        did not arrive. ``delivery_id`` names the attempt's ``Delivery`` for receivers
        that deduplicate."""


LINKS = (("url", "Alert"), ("queue_url", "Queue"), ("dead_letters_url", "Dead letters"))


def message_text(payload: dict[str, Any]) -> str:
    """The notification as plain text: for several alerts of a group, the count and the
    first of them (with how many more) before the lead alert; then the summary, the
    subject, the times, the details and the links (for email bodies and chat
    services)."""
    a = payload["alert"]
    lines = group_lines(payload)
    if lines:
        lines += ["", "The first of them:"]
    lines += [a["summary"], "", f"Rule: {a['rule']} ({a['severity']}), state {a['state']}"]
    where = subject(a["topic"], a["group"], a["queue"], a["key"], a["consumer"])
    if where:
        offset = a.get("offset")
        lines.append(f"Subject: {where}" + (f" (offset {offset})" if offset is not None else ""))
    lines.append(f"Since: {a['since']}; opened at {a['opened_at']}")
    if a.get("resolved_at"):
        lines.append(f"Resolved at: {a['resolved_at']} after {duration(a['duration_s'])}")
    if a.get("details"):
        lines += ["", "Details:"]
        lines += [f"  {label}: {value}" for label, value in detail_rows(a["details"])]
    links = [f"  {label}: {a[field]}" for field, label in LINKS if a.get(field)]
    if links:
        lines += ["", "Links:", *links]
    return "\n".join(lines)


def group_lines(payload: dict[str, Any]) -> list[str]:
    """The group part of the text ([] for one alert): ``orders / mailer: 24 alerts
    (…)``, one line per listed alert, how many more, where to see them all, and how many
    resolutions of the group ride along."""
    summary = payloads.group_summary(payload)
    if not summary:
        return []
    g = payload["group"]
    listed, count = payloads.told(payload)
    lines = [summary, ""]
    lines += [f"  - {payloads.subject(i)}: {i['summary']}" for i in listed]
    if count > len(listed):
        lines.append(f"  … and {count - len(listed)} more")
    if g.get("url"):
        lines.append(f"All of them: {g['url']}")
    if payload["event"] != "resolved" and g.get("resolved_count"):
        lines.append(f"Resolved since the last notification: {g['resolved_count']}")
    return lines


def one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line of at most ``limit`` characters (mail subjects, titles)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
