"""Further services through apprise (Slack, Teams, Telegram, Discord, ntfy, …): the
target is one or more apprise URLs (``tgram://…``, ``msteams://…``) separated by spaces
or commas; the title is the headline, the body the plain-text message."""

from __future__ import annotations

from typing import Any

import apprise
from apprise.utils.parse import parse_urls
from django.conf import settings

from lockstep.dashboard.alerts import payload as payloads
from lockstep.dashboard.alerts.channels.base import (
    ChannelKind,
    DeliveryError,
    message_text,
    one_line,
)
from lockstep.dashboard.alerts.models import Channel

NOTIFY_TYPES = {
    "opened": apprise.NotifyType.FAILURE,
    "renotify": apprise.NotifyType.WARNING,
    "resolved": apprise.NotifyType.SUCCESS,
}


def urls(target: str) -> list[str]:
    # apprise's own splitter: it knows commas inside a URL's query (``?to=a,b``).
    return [str(u) for u in parse_urls(target)]


class AppriseKind(ChannelKind):
    name = "apprise"
    label = "Apprise (Slack, Teams, Telegram, …)"

    @classmethod
    def validate(cls, target: str, secret: str, format: str) -> None:
        found = urls(target)
        if not found:
            raise ValueError("give at least one apprise URL, e.g. tgram://bottoken/chat_id")
        for url in found:
            if not apprise.Apprise().add(url):
                scheme = url.split("://", 1)[0]
                raise ValueError(
                    f"apprise does not understand the {scheme}:// URL (check its spelling "
                    "and required parts at https://github.com/caronc/apprise/wiki)"
                )

    def send(self, channel: Channel, payload: dict[str, Any], delivery_id: int | None) -> None:
        services = apprise.Apprise()
        if not services.add(urls(channel.target)):
            raise DeliveryError("none of the channel's apprise URLs is understood", False)
        result = services.notify(
            body=message_text(payload),
            title=one_line(payloads.headline(payload)),
            notify_type=NOTIFY_TYPES.get(payload["event"], apprise.NotifyType.INFO),
            timeout=float(settings.LOCKSTEP_ALERT_SEND_TIMEOUT_SECONDS),
        )
        if not result:
            said = [e.message for e in result.logs() if e.level in ("WARNING", "ERROR")]
            detail = "; ".join(said[-3:]) or "no reason given"
            raise DeliveryError(f"apprise could not notify: {detail}", True)
