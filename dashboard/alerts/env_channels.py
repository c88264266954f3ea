"""Channels declared in the environment (deployment as code, docs/alerts-delivery.md).

``LOCKSTEP_ALERT_WEBHOOKS`` is a JSON list of ``{"url", "secret"?, "format"?}`` objects
and ``LOCKSTEP_ALERT_EMAIL_TO`` a comma-separated list of addresses. The settings module
parses both at start-up with ``parse_webhooks`` / ``parse_email_to`` (a bad value stops
the process with ``ImproperlyConfigured``), so this module imports no models at module
level: ``sync_env_channels`` (run by the dispatcher when it starts) mirrors them into
``Channel`` rows with ``from_env=True``.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.core.validators import validate_email

if TYPE_CHECKING:
    from lockstep.dashboard.alerts.models import Channel

log = logging.getLogger(__name__)

WEBHOOKS_VAR, EMAIL_TO_VAR = "LOCKSTEP_ALERT_WEBHOOKS", "LOCKSTEP_ALERT_EMAIL_TO"
# Body formats of the webhook kind: the documented payload, or Slack's incoming-webhook
# shape (Mattermost and Rocket.Chat accept it too).
WEBHOOK_FORMATS = ("json", "slack")
EMAIL_CHANNEL = "env-email"


def check_webhook(url: str, format: str) -> None:
    """``ValueError`` unless ``url`` is an http(s) URL with a host and ``format`` is one
    of ``WEBHOOK_FORMATS`` (blank means ``json``). Shared with the webhook kind."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"the webhook URL must start with http:// or https://, got {url!r}")
    if format and format not in WEBHOOK_FORMATS:
        raise ValueError(
            f"the webhook format must be one of {', '.join(WEBHOOK_FORMATS)}, got {format!r}"
        )


def check_addresses(target: str) -> list[str]:
    """The addresses of a comma-separated list; ``ValueError`` naming a bad one."""
    addresses = [a.strip() for a in target.split(",") if a.strip()]
    if not addresses:
        raise ValueError("give at least one email address (several: separate with commas)")
    for address in addresses:
        try:
            validate_email(address)
        except ValidationError:
            raise ValueError(f"{address!r} is not an email address") from None
    return addresses


def normalize_webhooks(items: Any) -> list[dict[str, str]]:
    """``[{"url", "secret", "format"}, ...]`` with every key present (format defaults to
    ``json``); ``ImproperlyConfigured`` naming the entry that is wrong."""
    if not isinstance(items, list):
        raise ImproperlyConfigured(f"{WEBHOOKS_VAR} must be a JSON list of objects")
    out = []
    for n, item in enumerate(items, start=1):
        where = f"{WEBHOOKS_VAR} entry {n}"
        if not isinstance(item, dict) or not isinstance(item.get("url"), str):
            raise ImproperlyConfigured(f'{where} must be an object with a "url" string')
        unknown = set(item) - {"url", "secret", "format"}
        if unknown:
            raise ImproperlyConfigured(f"{where} has unknown keys: {', '.join(sorted(unknown))}")
        secret, format = item.get("secret") or "", item.get("format") or "json"
        if not isinstance(secret, str) or not isinstance(format, str):
            raise ImproperlyConfigured(f'{where}: "secret" and "format" must be strings')
        try:
            check_webhook(item["url"], format)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{where}: {exc}") from None
        out.append({"url": item["url"].strip(), "secret": secret, "format": format})
    return out


def parse_webhooks(raw: str) -> list[dict[str, str]]:
    """The value of ``LOCKSTEP_ALERT_WEBHOOKS`` (blank: none)."""
    if not raw.strip():
        return []
    try:
        items = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ImproperlyConfigured(
            f'{WEBHOOKS_VAR} is not valid JSON ({exc}); expected e.g. [{{"url": '
            '"https://hooks.example.com/x", "secret": "s3cret", "format": "json"}]'
        ) from None
    return normalize_webhooks(items)


def parse_email_to(raw: str) -> list[str]:
    """The value of ``LOCKSTEP_ALERT_EMAIL_TO`` (blank: no env-declared email channel)."""
    if not raw.strip():
        return []
    try:
        return check_addresses(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{EMAIL_TO_VAR}: {exc}") from None


def declared() -> list[dict[str, str]]:
    """The env-declared channels as ``Channel`` field values, webhooks first, in order."""
    from django.conf import settings

    rows = [
        {
            "name": f"env-webhook-{n}",
            "kind": "webhook",
            "target": hook["url"],
            "secret": hook["secret"],
            "format": hook["format"],
        }
        for n, hook in enumerate(normalize_webhooks(settings.LOCKSTEP_ALERT_WEBHOOKS), start=1)
    ]
    to = list(settings.LOCKSTEP_ALERT_EMAIL_TO)
    if to:
        rows.append(
            {
                "name": EMAIL_CHANNEL,
                "kind": "email",
                "target": ", ".join(to),
                "secret": "",
                "format": "",
            }
        )
    return rows


def sync_env_channels() -> list[Channel]:
    """Upsert the env-declared channels (enabled, ``from_env=True``) and disable env rows
    no longer declared; they are kept, not deleted, so their deliveries stay visible. A
    channel made in the UI under an ``env-…`` name is left alone (logged). Returns the
    declared channels."""
    from lockstep.dashboard.alerts.models import (
        Channel,  # settings import this module: no models yet
    )

    channels = []
    for row in declared():
        existing = Channel.objects.filter(name=row["name"]).first()
        if existing is not None and not existing.from_env:
            log.warning("channel %s was made in the UI; not overwriting it", row["name"])
            continue
        channel, _ = Channel.objects.update_or_create(
            name=row["name"], defaults={**row, "enabled": True, "from_env": True}
        )
        channels.append(channel)
    gone = Channel.objects.filter(from_env=True, enabled=True)
    gone.exclude(pk__in=[c.pk for c in channels]).update(enabled=False)
    return channels
