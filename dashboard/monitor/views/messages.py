"""Message lookup: by key, or by (queue, offset); each message's state per group and its
history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.http import HttpRequest

from lockstep.dashboard.monitor import queries
from lockstep.dashboard.monitor.handled import handled_times
from lockstep.dashboard.web.pages import page_view
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.views import (
    BadParameter,
    NotFound,
    api_view,
    int_param,
    text_param,
    topic_queue_count,
)
from lockstep.workers.inspect import MessageNotFound, list_topics, message_at, messages_by_key
from lockstep.workers.inspect.messages import MessageView
from lockstep.workers.refs import QueueRef

MAX_MESSAGES = 200


def build_messages(request: HttpRequest) -> dict[str, Any]:
    """``?topic=&key=`` or ``?topic=&queue=&offset=``: ``{"topic", "queue", "key", "by",
    "max_offset", "messages": [{..., "states": [...]}], "history": [...]}``; see
    docs/http-api.md §7."""
    params = request.GET
    topic = text_param(params.get("topic"), "topic", max_length=128)
    key = text_param(params.get("key"), "key")
    queue = int_param(params.get("queue"), "queue")
    offset = int_param(params.get("offset"), "offset")
    limit = (
        int_param(params.get("limit"), "limit", default=50, minimum=1, maximum=MAX_MESSAGES) or 50
    )
    if not topic:
        raise BadParameter("topic is required")
    if key and (queue is not None or offset is not None):
        raise BadParameter("give either key, or queue and offset, not both")
    if not key and (queue is None or offset is None):
        raise BadParameter("give key, or queue and offset")
    client = get_redis()
    topic_queue_count(client, topic)
    if key:
        by_key = messages_by_key(client, topic, key, limit)
        messages = _with_handled_times(topic, by_key["queue"], key, by_key["messages"])
        history = queries.key_history(topic, key)
        return {**by_key, "messages": messages, "by": "key", "history": history}
    assert queue is not None and offset is not None
    try:
        at = message_at(client, QueueRef(topic, queue), offset)
    except (ValueError, MessageNotFound) as exc:
        raise NotFound(str(exc)) from None
    history = queries.offset_history(topic, queue, at["key"], offset)
    messages = _with_handled_times(topic, queue, at["key"], at["messages"])
    return {**at, "messages": messages, "by": "offset", "history": history}


def _with_handled_times(
    topic: str, queue: int, key: str, messages: Sequence[MessageView]
) -> list[dict[str, Any]]:
    """The messages, each ``handled`` state with when and in how many attempts the group
    handled it (``handled_at_ms``, ``handled_event``, ``attempts``: monitor.handled)."""
    shown = [
        (s["group"], m["offset"], m["produced_at_ms"])
        for m in messages
        for s in m["states"]
        if s["state"] == "handled"
    ]
    times = handled_times(topic, queue, key, shown)
    return [
        {
            **m,
            "states": [
                {**s, **times[(s["group"], m["offset"])].as_dict()}
                if s["state"] == "handled"
                else dict(s)
                for s in m["states"]
            ],
        }
        for m in messages
    ]


def build_lookup_page(request: HttpRequest) -> dict[str, Any]:
    """The lookup, plus the topics for the form; without a query only the form."""
    topics = [t.name for t in list_topics(get_redis())]
    if not any(request.GET.get(name) for name in ("key", "queue", "offset")):
        return {"by": None, "messages": [], "history": [], "topics": topics}
    return {**build_messages(request), "topics": topics}


messages_page = page_view("monitor/messages.html", build_lookup_page)
messages_api = api_view(build_messages)
