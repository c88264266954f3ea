"""The answer to a login refused by django-axes (``AXES_LOCKOUT_CALLABLE``): the login
page's look, status 429, and how long the lock lasts in words a person reads."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

LOCKOUT_STATUS = 429  # Too Many Requests: a throttle, not a wrong password (401/403)


def locked_out(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict[str, Any] | None = None,
) -> HttpResponse:
    """Axes calls this for every refused attempt, the right password included."""
    minutes = settings.LOCKSTEP_LOGIN_COOLOFF_MINUTES
    context = {
        "username": (credentials or {}).get("username") or request.POST.get("username", ""),
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "cooloff_minutes": minutes,
    }
    if not request.accepts("text/html"):
        message = f"too many failed logins: try again in {minutes} minutes"
        return JsonResponse({"error": message}, status=LOCKOUT_STATUS)
    return render(request, "registration/locked_out.html", context, status=LOCKOUT_STATUS)
