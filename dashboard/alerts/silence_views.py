"""The silences page: the active and past silences (the history is kept), and the
operators' create and end-early.

A silence with no topic, group or rule would mute every notification: it is refused
unless the form's explicit ``everything`` box is ticked.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone

from lockstep.dashboard.alerts.models import Silence
from lockstep.dashboard.alerts.rules import RULES
from lockstep.dashboard.alerts.web import (
    MANAGE_SILENCE,
    VIEW_SILENCE,
    action,
    choice,
    flag,
    has_perm,
    minutes,
    page,
    require,
    row_id,
    text,
    utc_time,
)
from lockstep.dashboard.monitor.views.common import BadParameter, NotFound

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
        "now": now,
    }


def silence_from(params: Any, actor: str, now: datetime) -> Silence:
    """The silence the form describes; ``BadParameter`` with what to fix."""
    silence = Silence(
        topic=text(params, "topic"),
        group=text(params, "group"),
        rule=choice(params, "rule", RULES),
        reason=text(params, "reason", max_length=2000),
        created_by=actor,
        starts_at=now,
        created_at=now,
    )
    if not (silence.topic or silence.group or silence.rule) and not flag(params, "everything"):
        raise BadParameter(
            "give a topic, a group or a rule to silence; a silence of everything needs the "
            "'silence everything' box ticked"
        )
    length = minutes(params, "minutes", "duration")
    until = utc_time(params, "ends_at", "ends at")
    if (length is None) == (until is None):
        raise BadParameter("give either a duration in minutes or an end time (UTC), not both")
    ends_at = now + length if length is not None else until
    assert ends_at is not None
    if ends_at <= now:
        raise BadParameter("the silence must end in the future")
    silence.ends_at = ends_at
    return silence


@action
def create_silence_view(request: HttpRequest) -> HttpResponse:
    require(request, MANAGE_SILENCE, "create silences")
    silence = silence_from(request.POST, request.user.get_username(), timezone.now())
    silence.save()
    messages.success(request, f"Created: {silence}.")
    return redirect("alert-silences")


@action
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
