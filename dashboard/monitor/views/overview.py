"""The overview: the fleet's summary (per topic and group), its worst queues, and a table
of every (topic, group, queue) paged, sorted and filtered on the server, all from the
fleet state (docs/fleet-state.md): what a request costs follows what it shows."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import reverse

from lockstep.dashboard.monitor import overview_socket
from lockstep.dashboard.monitor.routing import OVERVIEW_SOCKET_PATH
from lockstep.dashboard.web.pages import page
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.store import fleet_read
from lockstep.dashboard.web.views import api_view


def build_overview(request: HttpRequest) -> dict[str, Any]:
    """``overview_data`` for the query's view (``BadParameters`` names every bad field),
    after ``fleet_read.ensure_fresh``."""
    view = fleet_read.table_view(request.GET)
    fleet_read.ensure_fresh(get_redis())
    return overview_socket.overview_data(view)


@page("monitor/overview.html")
def overview_page(request: HttpRequest) -> dict[str, Any]:
    """The first paint is rendered here; ``monitor/overview.js`` then keeps the summary,
    the worst queues and the table's page current from the socket (or the JSON view)."""
    data = build_overview(request)
    view = fleet_read.table_view(request.GET)
    query = request.GET.urlencode()
    return {
        **data,
        "api_url": reverse("api-overview") + (f"?{query}" if query else ""),
        "socket_path": OVERVIEW_SOCKET_PATH + (f"?{query}" if query else ""),
        "links": fleet_read.table_links(view, data["table"]),
        "socket_view": overview_socket.socket_view(data),
        "states": fleet_read.STATES,
        "sorts": tuple(fleet_read.SORTS),
    }


overview_api = api_view(build_overview)
