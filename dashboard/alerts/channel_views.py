"""The channels page (docs/alerts-delivery.md): every notification channel with its
recent deliveries, and the admins' add, edit, delete, enable/disable and "send test".

Secrets are never rendered (the edit form leaves them blank: blank keeps the stored one;
a form that failed is shown again without them) and targets are shown masked (URLs keep
their scheme and host). Channels declared in the environment (``from_env``) are shown
read-only: only a test may be sent to them.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from django.contrib import messages
from django.db import IntegrityError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from lockstep.dashboard.alerts import dispatch
from lockstep.dashboard.alerts.channels import KINDS
from lockstep.dashboard.alerts.fields import flag, row_id
from lockstep.dashboard.alerts.forms import ChannelForm
from lockstep.dashboard.alerts.models import Channel, Delivery
from lockstep.dashboard.alerts.permissions import CHANGE_CHANNELS, VIEW_CHANNELS
from lockstep.dashboard.web.pages import form_action, invalid, page, require
from lockstep.dashboard.web.roles import has_perm
from lockstep.dashboard.web.views import BadParameter, NotFound

RECENT_DELIVERIES = 5
DELETE_CHANNELS = "alerts.delete_channel"
ADD_CHANNELS = "alerts.add_channel"


def mask(target: str) -> str:
    """``target`` safe to show: each URL as ``scheme://host/…`` (paths and credentials
    often carry tokens); anything else (email addresses) as is."""
    shown = []
    for item in re.split(r"[\s,]+", target.strip()):
        if "://" not in item:
            shown.append(item)
            continue
        parts = urlsplit(item)
        host = parts.hostname or ""
        port = f":{parts.port}" if _port(parts) else ""
        rest = "/…" if (parts.path.strip("/") or parts.query or parts.username) else ""
        shown.append(f"{parts.scheme}://{host}{port}{rest}")
    return ", ".join(s for s in shown if s)


def _port(parts: Any) -> int | None:
    try:
        return int(parts.port) if parts.port else None
    except ValueError:
        return None


def find_channel(channel_id: str) -> Channel:
    found = Channel.objects.filter(pk=row_id(channel_id, "channel")).first()
    if found is None:
        raise NotFound(f"no channel #{channel_id}")
    return found


def editable(channel_id: str) -> Channel:
    channel = find_channel(channel_id)
    if channel.from_env:
        raise BadParameter(
            f"channel {channel.name!r} is declared in the environment; change it there"
        )
    return channel


@page("alerts/channels.html", VIEW_CHANNELS)
def channels_page(request: HttpRequest) -> dict[str, Any]:
    rows = []
    for channel in Channel.objects.all():
        recent = Delivery.objects.filter(channel=channel).order_by("-created_at", "-id")
        rows.append(
            {
                "channel": channel,
                "kind_label": KINDS[channel.kind].label if channel.kind in KINDS else channel.kind,
                "target": mask(channel.target),
                "has_secret": bool(channel.secret),
                "recent": list(recent.select_related("alert")[:RECENT_DELIVERIES]),
            }
        )
    return {
        "channels": rows,
        "kinds": [(name, kind.label) for name, kind in KINDS.items()],
        "form": ChannelForm(),
        "may_manage": has_perm(request.user, CHANGE_CHANNELS),
        "may_add": has_perm(request.user, ADD_CHANNELS),
        "may_delete": has_perm(request.user, DELETE_CHANNELS),
    }


@page("alerts/channel_form.html", CHANGE_CHANNELS)
def channel_edit_page(request: HttpRequest, channel_id: str) -> dict[str, Any]:
    channel = editable(channel_id)
    return {
        "channel": channel,
        "form": ChannelForm(channel=channel),
        "kinds": [(name, kind.label) for name, kind in KINDS.items()],
    }


def _save(channel: Channel) -> None:
    """Saves; a name taken since the form was checked is the error page."""
    try:
        channel.save()
    except IntegrityError:
        raise BadParameter(f"there is already a channel named {channel.name!r}") from None


@form_action
def add_channel_view(request: HttpRequest) -> HttpResponse:
    require(request, ADD_CHANNELS, "add channels")
    form = ChannelForm(request.POST)
    if not form.is_valid():
        return invalid(request, channels_page, {"form": form})
    channel = form.apply(Channel())
    _save(channel)
    messages.success(request, f"Added channel {channel.name}.")
    return redirect("alert-channels")


@form_action
def save_channel_view(request: HttpRequest, channel_id: str) -> HttpResponse:
    require(request, CHANGE_CHANNELS, "change channels")
    channel = editable(channel_id)
    form = ChannelForm(request.POST, channel=channel)
    if not form.is_valid():
        return invalid(request, channel_edit_page, {"form": form}, channel_id)
    form.apply(channel)
    _save(channel)
    messages.success(request, f"Saved channel {channel.name}.")
    return redirect("alert-channels")


@form_action
def enable_channel_view(request: HttpRequest, channel_id: str) -> HttpResponse:
    """``enabled=1`` or ``0``."""
    require(request, CHANGE_CHANNELS, "enable or disable channels")
    channel = editable(channel_id)
    channel.enabled = flag(request.POST, "enabled")
    channel.save(update_fields=["enabled"])
    state = "enabled" if channel.enabled else "disabled"
    messages.success(request, f"Channel {channel.name} {state}.")
    return redirect("alert-channels")


@form_action
def delete_channel_view(request: HttpRequest, channel_id: str) -> HttpResponse:
    require(request, DELETE_CHANNELS, "delete channels")
    channel = editable(channel_id)
    channel.delete()
    messages.success(request, f"Deleted channel {channel.name}.")
    return redirect("alert-channels")


@form_action
def test_channel_view(request: HttpRequest, channel_id: str) -> HttpResponse:
    """Sends a test now and says how it went (the delivery is listed as well)."""
    require(request, CHANGE_CHANNELS, "send test notifications")
    channel = find_channel(channel_id)
    delivery = dispatch.send_test(channel)
    if delivery.status == Delivery.SENT:
        messages.success(request, f"Test sent to {channel.name}.")
    else:
        messages.error(
            request, f"Test to {channel.name} failed: {delivery.last_error or delivery.status}"
        )
    return redirect("alert-channels")
