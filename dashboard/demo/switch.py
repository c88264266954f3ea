"""The demo's switch on the dead-letter page of group ``billing``: break or fix the billing
handler (``handlers.handle_billing``) from the browser, as ``manage.py demo_poison`` does
from the shell.

It is shown only where it means something: on the page of the group the demo handler
consumes for, when ``LOCKSTEP_SUBSCRIPTIONS`` configures that handler. Flipping it is an
operator's action (a POST with CSRF protection and the replay permission); a viewer gets
403 and nothing changes.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from lockstep.dashboard.demo.handlers import FIXED_FLAG, poison_every
from lockstep.dashboard.web.errors import post_only
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.roles import REPLAY

DEMO_GROUP = "billing"
DEMO_HANDLER = "lockstep.dashboard.demo.handle_billing"


def demo_configured() -> bool:
    return any(
        s.group == DEMO_GROUP and s.handler == DEMO_HANDLER for s in settings.LOCKSTEP_SUBSCRIPTIONS
    )


def billing_switch(group: str) -> dict[str, Any] | None:
    """``{"fixed", "poison_every"}`` on the demo group's page, ``None`` anywhere else."""
    if group != DEMO_GROUP or not demo_configured():
        return None
    return {"fixed": bool(get_redis().exists(FIXED_FLAG)), "poison_every": poison_every()}


@login_required
@post_only
def billing_switch_view(request: HttpRequest) -> HttpResponse:
    """``state=fixed`` sets the flag, ``state=broken`` deletes it; then back to the page."""
    if not demo_configured():
        return _refuse(request, 404, "Not found", "the demo billing handler is not configured")
    if not request.user.has_perm(REPLAY):
        return _refuse(request, 403, "Forbidden", "only operators may fix or break the demo")
    state = request.POST.get("state", "")
    if state == "fixed":
        get_redis().set(FIXED_FLAG, 1)
    elif state == "broken":
        get_redis().delete(FIXED_FLAG)
    else:
        return _refuse(request, 400, "Bad request", "state must be fixed or broken")
    return redirect("dead-letters", group=DEMO_GROUP)


def _refuse(request: HttpRequest, status: int, title: str, message: str) -> HttpResponse:
    context = {"title": title, "message": message}
    return render(request, "monitor/error.html", context, status=status)
