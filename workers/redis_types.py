"""Narrow redis-py's broad reply types (it is configured with bytes replies here)."""

from __future__ import annotations

from typing import Any, cast

Entry = tuple[bytes, dict[bytes, bytes]]
Fields = dict[Any, Any]


def entries(reply: Any) -> list[Entry]:
    """XRANGE reply → list of (id, fields)."""
    return cast(list[Entry], list(reply or []))


def xread_entries(reply: Any) -> list[Entry]:
    """XREAD reply for a single stream → list of (id, fields)."""
    if not reply:
        return []
    return cast(list[Entry], list(reply[0][1]))


def as_bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def raw_reply(response: Any, **_options: Any) -> Any:
    """A response callback that keeps the parser's reply as it is (``raw_xread``)."""
    return response


def raw_xread(reply: Any) -> dict[bytes, list[Entry]]:
    """An XREAD reply left raw (``raw_reply``: a map of stream to entries under RESP3, a
    list of [stream, entries] under RESP2; None when nothing came) → stream -> list of
    (id, fields). redis-py's own parse builds each entry's fields pair by pair in Python;
    a reader of a thousand streams parses every message it hands out."""
    if not reply:
        return {}
    pairs = reply.items() if isinstance(reply, dict) else reply
    return {stream: script_entries(found) for stream, found in pairs}


def script_entries(reply: Any) -> list[Entry]:
    """XRANGE's reply as a Lua script returns it, or as the parser gives it when no
    response callback ran (``[id, [field, value, ...]]`` per entry) → list of (id,
    fields). A stream entry's fields always come in pairs."""
    out: list[Entry] = []
    for entry_id, flat in reply:
        pairs = iter(flat)
        out.append((entry_id, dict(zip(pairs, pairs, strict=False))))
    return out


def entry_id_order(entry_id: str) -> tuple[int, int]:
    """A stream entry ID (``<ms>-<seq>``, or ``<ms>`` alone as XRANGE accepts it) as a
    sortable pair: ``"0-0"`` is the smallest."""
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)
