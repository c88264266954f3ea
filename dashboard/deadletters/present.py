"""Dead-letter records as JSON: a list item, one record in full, an export line.

Everything a message carried (key, body, headers, errors) is returned as data, never as
markup: JSON answers are served as ``application/json`` with ``nosniff``, and pages
escape it when they render it.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import redis

from lockstep.dashboard.deadletters.models import DeadLetter, Status
from lockstep.dashboard.deadletters.queries import to_ms
from lockstep.workers.errors import UnknownTopicError
from lockstep.workers.inspect import held_keys

# A body is shown as text (or pretty JSON) up to this many bytes, and cut beyond: a page
# stays light even for a body at LOCKSTEP_MAX_BODY_BYTES (4 MiB). The export has it all.
BODY_TEXT_LIMIT = 256 * 1024
# A binary body is shown as hex up to this many bytes (two characters per byte).
BODY_HEX_LIMIT = 16 * 1024


def item(record: DeadLetter) -> dict[str, Any]:
    """A list item (also ``manage.py dlq list --json``)."""
    return {
        "id": record.pk,
        "dlq_id": record.dlq_id,
        "topic": record.topic,
        "group": record.group,
        "queue": record.queue,
        "offset": record.offset,
        "key": record.key,
        "status": record.status,
        "reconsume_times": record.reconsume_times,
        "error": record.error,
        "dead_lettered_at": record.dead_at.isoformat(),
        "dead_at_ms": to_ms(record.dead_at),
        "produced_at_ms": to_ms(record.produced_at),
        "body_size": record.body_size,
        "ordering": record.ordering,
        "after_dlq": record.after_dlq,
        "replay_of": record.replay_of,
    }


def detail(record: DeadLetter, client: redis.Redis, *, show_body: bool) -> dict[str, Any]:
    """One record in full: the item, body and headers (``None`` with ``body_hidden`` when
    the user may not see them), attempts, status history, the records it replays or was
    replayed as, and the hold on its key."""
    return {
        **item(record),
        **_content(record, show_body, render_body),
        "attempts": record.attempts,
        "history": [
            {
                "status": change.status,
                "at": change.at.isoformat(),
                "at_ms": to_ms(change.at),
                "actor": change.actor,
                "request_id": change.request_id,
                "note": change.note,
            }
            for change in record.history.order_by("at", "id")
        ],
        "replay_of_id": _replayed_record(record),
        "dead_again_as": _replays(record) if record.status == Status.DEAD_AGAIN else [],
        "hold": hold_of(client, record),
    }


def export_line(record: DeadLetter, *, show_body: bool) -> str:
    """One line of the JSON-lines export: the item, attempts, headers and the exact body
    (base64; also as text when it is UTF-8). ASCII-only JSON: any text a message carried
    (even a lone surrogate from a JSON escape) makes a valid line."""
    data = {**item(record), **_content(record, show_body, _exact_body), "attempts": record.attempts}
    return json.dumps(data, separators=(",", ":")) + "\n"


def _content(record: DeadLetter, show_body: bool, body: Any) -> dict[str, Any]:
    if not show_body:
        return {"body_hidden": True, "headers": None, "body": None}
    return {"body_hidden": False, "headers": record.headers, "body": body(bytes(record.body))}


def render_body(body: bytes) -> dict[str, Any]:
    """``{"size", "kind": "json" | "text" | "binary", ...}``: JSON with ``text`` and
    ``pretty``; text with ``text``; binary (not UTF-8) with ``hex``; ``truncated`` when
    only the first ``BODY_TEXT_LIMIT`` / ``BODY_HEX_LIMIT`` bytes are shown."""
    size = len(body)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        shown = body[:BODY_HEX_LIMIT]
        return {"size": size, "kind": "binary", "hex": shown.hex(), "truncated": size > len(shown)}
    if size <= BODY_TEXT_LIMIT:
        pretty = _pretty_json(text)
        if pretty is not None:
            return {
                "size": size,
                "kind": "json",
                "text": text,
                "pretty": pretty,
                "truncated": False,
            }
        return {"size": size, "kind": "text", "text": text, "truncated": False}
    cut = body[:BODY_TEXT_LIMIT].decode("utf-8", "ignore")  # no half character at the end
    return {"size": size, "kind": "text", "text": cut, "truncated": True}


def _pretty_json(text: str) -> str | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return None
    if not isinstance(value, dict | list):
        return None  # a bare string or number reads better as text
    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return None


def _exact_body(body: bytes) -> dict[str, Any]:
    try:
        text: str | None = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return {"size": len(body), "base64": base64.b64encode(body).decode(), "text": text}


def _stream(record: DeadLetter) -> Any:
    return DeadLetter.objects.filter(topic=record.topic, group=record.group, queue=record.queue)


def _replayed_record(record: DeadLetter) -> int | None:
    if not record.replay_of:
        return None
    return _stream(record).filter(dlq_id=record.replay_of).values_list("pk", flat=True).first()


def _replays(record: DeadLetter) -> list[int]:
    """The records of this one's replays that died again."""
    return list(
        DeadLetter.objects.filter(group=record.group, replay_of=record.dlq_id)
        .exclude(replay_of="")
        .filter(topic=record.topic, queue=record.queue)
        .order_by("id")
        .values_list("pk", flat=True)
    )


def hold_of(client: redis.Redis, record: DeadLetter) -> dict[str, Any] | None:
    """The hold on the record's key now (``after_dlq = hold``): ``{"state", "dlq_id",
    "held_by_this", "since_ms", "parked_messages"}``; ``None`` when the key is not held
    (or the topic is gone)."""
    try:
        held = held_keys(client, record.topic, record.group)
    except UnknownTopicError:
        return None
    for hold in held:
        if hold["queue"] == record.queue and hold["key"] == record.key:
            return {
                "state": hold["state"],
                "dlq_id": hold["dlq_id"],
                "held_by_this": hold["dlq_id"] == record.dlq_id,
                "since_ms": hold["since_ms"],
                "parked_messages": hold["messages"],
            }
    return None
