"""The silences page: the active and past silences (the history is kept), and the
operators' create and end-early.

A silence with no topic, group or rule would mute every notification: it is refused
unless the form's explicit ``everything`` box is ticked.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone

from lockstep.dashboard.alerts.fields import row_id
from lockstep.dashboard.alerts.forms import SilenceForm
from lockstep.dashboard.alerts.models import Silence
from lockstep.dashboard.alerts.permissions import MANAGE_SILENCE, VIEW_SILENCE
from lockstep.dashboard.alerts.rules import RULES
from lockstep.dashboard.web.pages import form_action, invalid, page, require
from lockstep.dashboard.web.roles import has_perm
from lockstep.dashboard.web.views import NotFound

# Past silences shown: the most recent ones (the admin has them all).
PAST_SHOWN = 100


@page("alerts/silences.html", VIEW_SILENCE)
def silences_page(request: HttpRequest) -> dict[str, Any]:
    now = timezone.now()
    return {
        "active": list(Silence.objects.filter(ends_at__gt=now).order_by("ends_at", "id")),
        "past": list(Silence.objects.filter(ends_at__lte=now).order_by("-ends_at")[:PAST_SHOWN]),
        "past_limit": PAST_SHOWN,
        "rules": sorted(RULES),
        "may_manage": has_perm(request.user, MANAGE_SILENCE),
        "form": SilenceForm(),
        "now": now,
    }


@form_action
def create_silence_view(request: HttpRequest) -> HttpResponse:
    require(request, MANAGE_SILENCE, "create silences")
    form = SilenceForm(request.POST)
    if not form.is_valid():
        return invalid(request, silences_page, {"form": form})
    silence = form.silence(request.user.get_username(), timezone.now())
    silence.save()
    messages.success(request, f"Created: {silence}.")
    return redirect("alert-silences")


@form_action
def end_silence_view(request: HttpRequest, silence_id: str) -> HttpResponse:
    """Ends an active silence now; ending one that already ended changes nothing."""
    require(request, MANAGE_SILENCE, "end silences")
    now = timezone.now()
    pk = row_id(silence_id, "silence")
    if not Silence.objects.filter(pk=pk).exists():
        raise NotFound(f"no silence #{silence_id}")
    if Silence.objects.filter(pk=pk, ends_at__gt=now).update(ends_at=now) == 1:
        messages.success(request, f"Silence #{pk} ended.")
    else:
        messages.info(request, f"Silence #{pk} had already ended.")
    return redirect("alert-silences")
