"""The overview: every topic's queues and groups (live), plus rates, retries, dead letters
and stuck queues under ``stats``."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from lockstep.dashboard.monitor.health import overview_stats
from lockstep.dashboard.monitor.routing import OVERVIEW_SOCKET_PATH
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.views import api_view
from lockstep.workers.inspect import overview


def build_overview(request: HttpRequest) -> dict[str, Any]:
    """``workers.inspect.overview`` as is, plus ``stats`` (``health.overview_stats``)."""
    client = get_redis()
    snapshot = overview(client)
    return {**snapshot, "stats": overview_stats(client, snapshot)}


@login_required
def overview_page(request: HttpRequest) -> HttpResponse:
    """The first paint is rendered here; ``monitor/overview.js`` then owns the table: it
    renders the embedded snapshot, then every socket update or JSON re-read."""
    context = {
        "overview": build_overview(request),
        "api_url": reverse("api-overview"),
        "socket_path": OVERVIEW_SOCKET_PATH,
    }
    return render(request, "monitor/overview.html", context)


overview_api = api_view(build_overview)
