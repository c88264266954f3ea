"""Notification channel kinds (docs/alerts-delivery.md). ``KINDS`` maps a
``Channel.kind`` to its class; adding a kind is one module with a ``ChannelKind``
subclass and one import line here."""

from __future__ import annotations

from lockstep.dashboard.alerts.channels.apprise_channel import AppriseKind
from lockstep.dashboard.alerts.channels.base import ChannelKind, DeliveryError
from lockstep.dashboard.alerts.channels.email_channel import EmailKind
from lockstep.dashboard.alerts.channels.webhook import WebhookKind

KINDS: dict[str, type[ChannelKind]] = {k.name: k for k in (EmailKind, WebhookKind, AppriseKind)}

__all__ = ["KINDS", "ChannelKind", "DeliveryError"]
