"""Pages and their JSON twins. Pages are server-rendered; their scripts keep them live."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse

from dashboard.monitor.redis_conn import get_redis
from workers.inspect import overview

OVERVIEW_SOCKET_PATH = "/ws/overview/"


def _json_login_required(request: HttpRequest) -> JsonResponse | None:
    if not request.user.is_authenticated:
        return JsonResponse({"error": "authentication required"}, status=401)
    return None


@login_required
def overview_page(request: HttpRequest) -> HttpResponse:
    """The first paint is rendered here; ``monitor/overview.js`` then owns the table: it
    renders the embedded snapshot, then every socket update or JSON re-read."""
    context = {
        "overview": overview(get_redis()),
        "api_url": reverse("api-overview"),
        "socket_path": OVERVIEW_SOCKET_PATH,
    }
    return render(request, "monitor/overview.html", context)


def overview_api(request: HttpRequest) -> JsonResponse:
    denied = _json_login_required(request)
    if denied is not None:
        return denied
    return JsonResponse(overview(get_redis()))
