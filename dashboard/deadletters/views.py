"""The dead-letter JSON API (read side): a group's list, one record, the export.

Same conventions as every JSON view (``dashboard.web.views``): 401 JSON when
anonymous, 404 JSON for an unknown group or record, 400 JSON for a bad parameter.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase

from lockstep.dashboard.deadletters import present
from lockstep.dashboard.deadletters.models import DeadLetter
from lockstep.dashboard.deadletters.queries import (
    Cursor,
    Filters,
    count_waiting,
    cursor_param,
    each_record,
    limit_param,
    page,
    sort_param,
)
from lockstep.dashboard.deadletters.sync import reconcile_record
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.roles import may_see_bodies
from lockstep.dashboard.web.views import (
    BadParameter,
    NotFound,
    api_view,
    int_param,
    refuse_nul,
)
from lockstep.workers.inspect import groups_of, list_topics


def require_known_group(group: str) -> None:
    """``NotFound`` unless some topic has ``group`` in Redis, or dead letters of it were
    recorded (their history stays readable after the group is gone from Redis)."""
    refuse_nul(group, "group")
    client = get_redis()
    if any(group in groups_of(client, t.name) for t in list_topics(client)):
        return
    if not DeadLetter.objects.filter(group=group).exists():
        raise NotFound(f"no consumer group {group!r}")


def build_list(request: HttpRequest, group: str) -> dict[str, Any]:
    """``?topic=&queue=&key=&error=&status=&since=&until=&sort=&cursor=&limit=`` →
    ``{"group", "items", "next_cursor", "count_waiting", "filters", "sort", "limit"}``."""
    require_known_group(group)
    params = request.GET
    filters = Filters.from_params(params)
    sort = sort_param(params.get("sort"))
    cursor = cursor_param(params.get("cursor"), sort)
    limit = limit_param(params.get("limit"))
    found = page(group, filters, sort, cursor, limit)
    return {
        "group": group,
        "items": [present.item(r) for r in found.records],
        "next_cursor": found.next_cursor,
        "count_waiting": count_waiting(group, filters),
        "filters": filters.as_dict(),
        "sort": sort,
        "limit": limit,
    }


def build_detail(request: HttpRequest, group: str, record_id: str) -> dict[str, Any]:
    pk = int_param(record_id, "id")
    refuse_nul(group, "group")
    record = DeadLetter.objects.filter(group=group, pk=pk).first() if pk is not None else None
    if record is None:
        raise NotFound(f"no dead letter {pk} in group {group!r}")
    client = get_redis()
    # Redis is the truth of whether it still waits: a replay or discard whose event was
    # lost shows as gone here at once, not after the next sync reaches it.
    reconcile_record(client, record)
    return present.detail(record, client, show_body=may_see_bodies(request.user))


dead_letters_api = api_view(build_list)
dead_letter_api = api_view(build_detail)


def export_view(request: HttpRequest, group: str) -> HttpResponseBase:
    """Every record matching the list's filters (from ``cursor`` on, when given), one JSON
    object per line (``present.export_line``), streamed."""
    if not request.user.is_authenticated:
        return JsonResponse({"error": "authentication required"}, status=401)
    try:
        require_known_group(group)
        filters = Filters.from_params(request.GET)
        sort = sort_param(request.GET.get("sort"))
        cursor = cursor_param(request.GET.get("cursor"), sort)
    except NotFound as exc:
        return JsonResponse({"error": str(exc)}, status=404)
    except BadParameter as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    show = may_see_bodies(request.user)
    args = (group, filters, sort, cursor, show)
    # Daphne serves an async iterator as it goes; a sync one would be read whole first.
    content = _lines_async(*args) if isinstance(request, ASGIRequest) else _lines(*args)
    response = StreamingHttpResponse(content, content_type="application/x-ndjson; charset=utf-8")
    filename = re.sub(r"[^A-Za-z0-9_.-]", "_", group)[:100]
    response["Content-Disposition"] = f'attachment; filename="dead-letters-{filename}.jsonl"'
    return response


def _lines(
    group: str, filters: Filters, sort: str, cursor: Cursor | None, show: bool
) -> Iterator[str]:
    for rows in each_record(group, filters, sort, cursor):
        yield "".join(present.export_line(r, show_body=show) for r in rows)


async def _lines_async(
    group: str, filters: Filters, sort: str, cursor: Cursor | None, show: bool
) -> AsyncIterator[str]:
    pages = each_record(group, filters, sort, cursor)
    next_chunk = sync_to_async(lambda: _next_chunk(pages, show))
    while (chunk := await next_chunk()) is not None:
        yield chunk


def _next_chunk(pages: Iterator[list[DeadLetter]], show: bool) -> str | None:
    rows = next(pages, None)
    return None if rows is None else "".join(present.export_line(r, show_body=show) for r in rows)
