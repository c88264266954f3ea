"""An action request as JSON, and its live progress through the channel layer.

The request's shape (``request_shape``) is what the API answers, what the CLI prints and
what the progress socket carries. Pushes are hints (channel-layer messages are
at-most-once and unordered): each carries the request as stored at that moment and a
``seq`` (``web.publish``: counted in Redis per group, so every publisher of the request,
the Celery task and a cancel from the web, shares one sequence). A socket client that
sees a seq other than the previous one + 1 re-reads ``status_url``.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db.models import Count

from lockstep.dashboard.deadletters.models import ActionItem, ActionRequest
from lockstep.dashboard.web.publish import group_part
from lockstep.dashboard.web.publish import publish as publish_messages

log = logging.getLogger(__name__)

SOCKET_PATH = "/ws/dead-letters/requests/{request_id}/"
STATUS_URL = "/api/v1/dead-letter-requests/{request_id}"
# The status view lists at most this many items; the counts cover them all.
ITEMS_SHOWN = 500


def progress_group(request_id: str) -> str:
    """The channel group of one request's progress: ``dlq-request-<id>`` (request ids are
    already safe; another, as ``web.publish.group_part`` makes it)."""
    return "dlq-request-" + group_part(request_id, 72)


def outcome_counts(request: ActionRequest) -> dict[str, int]:
    """Outcome -> how many of the request's items have it (``pending`` included)."""
    rows = (
        ActionItem.objects.filter(request=request)
        .values_list("outcome")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {outcome: n for outcome, n in rows}


def request_shape(request: ActionRequest) -> dict[str, Any]:
    """``{"request_id", "action", "group", "actor", "state", "total", "done",
    "outcomes", "reason", "filter", "selection_count", "created_at", "finished_at",
    "socket_path", "status_url"}``; times ISO 8601, ``finished_at`` null while it runs."""
    return {
        "request_id": request.request_id,
        "action": request.action,
        "group": request.group,
        "actor": request.actor,
        "state": request.state,
        "total": request.total,
        "done": request.done,
        "outcomes": outcome_counts(request),
        "reason": request.reason,
        "filter": request.filter,
        "selection_count": len(request.selection),
        "created_at": request.created_at.isoformat(),
        "finished_at": request.finished_at.isoformat() if request.finished_at else None,
        "socket_path": SOCKET_PATH.format(request_id=request.request_id),
        "status_url": STATUS_URL.format(request_id=request.request_id),
    }


def request_detail(request: ActionRequest) -> dict[str, Any]:
    """``request_shape`` plus ``items``: the first ``ITEMS_SHOWN`` in replay order, each
    ``{"id" (the dead letter's), "topic", "queue", "offset", "key", "outcome", "detail",
    "at"}``."""
    items = (
        ActionItem.objects.filter(request=request)
        .select_related("record")
        .only(
            "outcome",
            "detail",
            "at",
            "record__id",
            "record__topic",
            "record__queue",
            "record__offset",
            "record__key",
        )
        .order_by("id")[:ITEMS_SHOWN]
    )
    return {
        **request_shape(request),
        "items": [
            {
                "id": item.record.pk,
                "topic": item.record.topic,
                "queue": item.record.queue,
                "offset": item.record.offset,
                "key": item.record.key,
                "outcome": item.outcome,
                "detail": item.detail,
                "at": item.at.isoformat() if item.at else None,
            }
            for item in items
        ],
    }


def publish(request_id: str) -> None:
    """Push the request as stored now to its progress group. Never raises: a push is a
    hint, and losing one must not stop (or fail) the action that sent it (``web.publish``
    tells an outage once, any other error with its traceback)."""
    try:
        request = ActionRequest.objects.filter(request_id=request_id).first()
        if request is None:
            return
        message = {"type": "progress.update", "data": request_shape(request)}
    except Exception:  # the database: skip it, the action goes on
        log.warning("progress push of request %s skipped", request_id, exc_info=True)
        return
    publish_messages([(progress_group(request_id), message)], "dead-letter progress pushes")
