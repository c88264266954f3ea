"""Webhooks: a JSON POST of the documented payload (``format`` ``json``) or a Slack
incoming-webhook message (``slack``), signed with HMAC-SHA256 over the exact body when
the channel has a secret (docs/alerts-delivery.md)."""

from __future__ import annotations

import hashlib
import hmac
import json
import urllib.error
import urllib.request
from typing import Any

from django.conf import settings

from lockstep.dashboard.alerts import payload as payloads
from lockstep.dashboard.alerts.channels.base import ChannelKind, DeliveryError
from lockstep.dashboard.alerts.env_channels import check_webhook
from lockstep.dashboard.alerts.models import Channel

SIGNATURE_HEADER = "X-Lockstep-Signature"
USER_AGENT = "Lockstep-Alerts/1"
# Worth trying again: the receiver timed out, throttles us, or is failing for now.
RETRYABLE_STATUSES = frozenset({408, 425, 429})


def signature(secret: str, body: bytes) -> str:
    """The value of ``X-Lockstep-Signature`` for ``body``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def slack_body(payload: dict[str, Any]) -> dict[str, Any]:
    """Slack's incoming-webhook shape: a ``text`` with the headline and the alert's link,
    or for several alerts of a group the link to all of them (chat services turn a bare
    URL into a link)."""
    link = payload["alert"].get("url")
    if payloads.group_summary(payload):
        link = payload["group"].get("url") or link
    return {"text": payloads.headline(payload) + (f"\n{link}" if link else "")}


def body_bytes(channel: Channel, payload: dict[str, Any]) -> bytes:
    body = slack_body(payload) if channel.format == "slack" else payload
    return json.dumps(body, separators=(",", ":"), default=str).encode()


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # Following a redirect would turn the POST into a GET without the body: report it.
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirects)


class WebhookKind(ChannelKind):
    name = "webhook"
    label = "Webhook (JSON POST)"

    @classmethod
    def validate(cls, target: str, secret: str, format: str) -> None:
        check_webhook(target, format)

    def send(self, channel: Channel, payload: dict[str, Any], delivery_id: int | None) -> None:
        body = body_bytes(channel, payload)
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-Lockstep-Event": str(payload["event"]),
            "X-Lockstep-Delivery": "" if delivery_id is None else str(delivery_id),
        }
        if channel.secret:
            headers[SIGNATURE_HEADER] = signature(channel.secret, body)
        request = urllib.request.Request(
            channel.target.strip(), data=body, headers=headers, method="POST"
        )
        timeout = float(settings.LOCKSTEP_ALERT_SEND_TIMEOUT_SECONDS)
        try:
            with _opener.open(request, timeout=timeout) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            raise _status_error(exc) from None
        except (urllib.error.URLError, OSError) as exc:  # refused, DNS, TLS, timeout
            reason = getattr(exc, "reason", exc)
            raise DeliveryError(f"could not reach the webhook: {reason}", True) from None


def _status_error(exc: urllib.error.HTTPError) -> DeliveryError:
    said = exc.read(300).decode("utf-8", "replace").strip()
    message = f"the webhook answered HTTP {exc.code}" + (f": {said}" if said else "")
    if 300 <= exc.code < 400:
        where = exc.headers.get("Location", "?")
        return DeliveryError(f"{message}; it redirects to {where}: use that URL", False)
    return DeliveryError(message, exc.code >= 500 or exc.code in RETRYABLE_STATUSES)
