"""The viewer's time zone: chosen per user in the header's menu, stored server-side
(``TimeZonePreference``), activated for every request so that server-rendered times, and
the times the pages' scripts render (``<body data-time-zone>``), and the times typed into
forms, all use it. No choice means UTC. See docs/dashboard-service.md ("Times, time zones and
the colour scheme")."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme

from lockstep.dashboard.web.errors import error_answer, post_only
from lockstep.dashboard.web.store.models import TimeZonePreference

DEFAULT_ZONE = "UTC"
# What a typed time looks like: 24-hour, minutes, seconds optional (never the browser's
# locale format, which differs from viewer to viewer).
INPUT_FORMATS = ("%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S")
INPUT_PATTERN = r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?"
INPUT_PLACEHOLDER = "YYYY-MM-DD HH:MM"


@cache
def zone_names() -> tuple[str, ...]:
    """Every IANA zone a user may choose, UTC first, then by name (no legacy aliases
    such as ``US/Eastern`` or ``Etc/GMT+5``, whose signs confuse)."""
    names = {n for n in available_timezones() if "/" in n and not n.startswith(("Etc/", "US/"))}
    return (DEFAULT_ZONE, *sorted(names - {DEFAULT_ZONE}))


def zone_of(user: AbstractBaseUser | AnonymousUser) -> str:
    """The zone ``user`` chose, or UTC (anonymous users and users who never chose)."""
    if not user.is_authenticated:
        return DEFAULT_ZONE
    preference = TimeZonePreference.objects.filter(user_id=user.pk)
    choice = preference.values_list("zone", flat=True).first()
    return choice if choice in zone_names() else DEFAULT_ZONE


class ViewerTimeZoneMiddleware:
    """Activates the signed-in user's zone for the request (after authentication)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        timezone.activate(ZoneInfo(zone_of(request.user)))
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()


def parse_local(text: str) -> datetime | None:
    """``YYYY-MM-DD HH:MM[:SS]`` (or with a ``T``) read in the active zone, as an aware
    datetime; an ISO time with its own offset keeps it. None when it is not a time."""
    for fmt in INPUT_FORMATS:
        try:
            return timezone.make_aware(datetime.strptime(text, fmt))
        except ValueError:
            continue
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else timezone.make_aware(parsed)


@login_required
@post_only
def set_time_zone(request: HttpRequest) -> HttpResponse:
    """POST ``zone`` (an IANA name) and ``next`` (where to go back to)."""
    zone = (request.POST.get("zone") or "").strip()
    if zone not in zone_names():
        return error_answer(request, 400, f"unknown time zone {zone[:64]!r}")
    TimeZonePreference.objects.update_or_create(user=request.user, defaults={"zone": zone})
    back = request.POST.get("next") or "/"
    if not url_has_allowed_host_and_scheme(back, {request.get_host()}, request.is_secure()):
        back = "/"
    return HttpResponseRedirect(back)
