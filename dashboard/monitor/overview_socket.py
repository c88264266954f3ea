"""What the overview socket sends (docs/events.md §5): the page's own view — the summary,
the worst queues, the table's page on screen — first whole, then as changes, and never a
message over ``MAX_MESSAGE_BYTES`` whatever the fleet's size.

A view is made of parts: ``summary``, ``worst``, ``table`` (the page's paging, without
its rows), ``rows`` (each with its ``id``) and ``order`` (the ids of the page's rows, in
order). A change carries the parts that differ from what the socket sent before, and of
``rows`` only the rows that differ. ``messages`` cuts a change into messages under the
bound: rows first, ``order`` last, so a page applying them in turn never shows an id it
has no row for.
"""

from __future__ import annotations

import json
from typing import Any

from lockstep.dashboard.web.store import fleet_read

# No socket message is larger: far below daphne's 1 MiB, small enough that a browser
# applies one in a frame.
MAX_MESSAGE_BYTES = 64 * 1024
# Room left for the envelope (type, seq, time) and for a part's own JSON punctuation.
ENVELOPE_BYTES = 1024
# A worst queue's sentences are cut to this many characters in a socket message.
WHY_CHARS = 300
# Row fields the overview shows; the rest (lock expiry, counting down each reading) would
# make every row a change.
ROW_FIELDS = (
    "topic",
    "group",
    "queue",
    "max_offset",
    "committed_offset",
    "lag",
    "parked",
    "held_keys",
    "time_lag_s",
    "owner",
    "owner_live",
    "token",
    "state",
    "stuck",
    "severity",
    "dead_letters",
    "blocked_count",
)

View = dict[str, Any]


def overview_data(view: fleet_read.TableView) -> dict[str, Any]:
    """The overview of ``view``'s table as stored now (no Redis read): ``{"generated_at_ms",
    "swept_at_ms", "summary", "worst", "table", "view"}`` (docs/http-api.md §2): the
    overview's JSON view, and what its socket's parts are made from."""
    stamp = fleet_read.stamp()
    return {
        "generated_at_ms": stamp["refreshed_ms"],
        "swept_at_ms": stamp["swept_ms"],
        "summary": fleet_read.summary(),
        "worst": fleet_read.worst(),
        "table": fleet_read.table(view),
        "view": view.params(),
    }


def row_id(row: dict[str, Any]) -> str:
    """A row's id in socket messages: its (topic, group, queue) as compact JSON, exactly as
    the page's ``JSON.stringify`` writes it (overview.js makes the ids of the rows it
    rendered and of the JSON view's rows itself, and matches them against these)."""
    triple = [row["topic"], row["group"], row["queue"]]
    return json.dumps(triple, separators=(",", ":"), ensure_ascii=False)


def compact(row: dict[str, Any], *, why: bool = False) -> dict[str, Any]:
    out = {name: row[name] for name in ROW_FIELDS}
    out["id"] = row_id(row)
    if why:
        out["stuck_why"] = str(row.get("stuck_why", ""))[:WHY_CHARS]
    return out


def socket_view(data: dict[str, Any]) -> View:
    """The parts of an overview (``views.overview.overview_data``) a socket carries."""
    table = dict(data["table"])
    rows = [compact(r) for r in table.pop("rows")]
    return {
        "generated_at_ms": data["generated_at_ms"],
        "summary": data["summary"],
        "worst": [compact(r, why=True) for r in data["worst"]],
        "table": table,
        "rows": {r["id"]: r for r in rows},
        "order": [r["id"] for r in rows],
    }


def changes(before: View | None, after: View) -> dict[str, Any]:
    """The parts of ``after`` that differ from ``before`` (all of them when ``before`` is
    ``None``); ``rows`` as a list of the rows that differ. Empty when nothing does."""
    out: dict[str, Any] = {}
    for part in ("summary", "worst", "table", "order"):
        if before is None or before[part] != after[part]:
            out[part] = after[part]
    old_rows = before["rows"] if before is not None else {}
    rows = [r for rid, r in after["rows"].items() if old_rows.get(rid) != r]
    if rows:
        out["rows"] = rows
    return out


def messages(change: dict[str, Any], limit: int = MAX_MESSAGE_BYTES) -> list[dict[str, Any]]:
    """``change`` cut into message bodies of at most ``limit`` bytes of JSON (with the
    envelope's room): ``summary``, ``worst``, ``table``, then the rows in as few messages
    as fit, then ``order``. Each body has at least one part."""
    budget = limit - ENVELOPE_BYTES
    bodies: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    size = 0

    def add(name: str, value: Any) -> None:
        nonlocal current, size
        cost = _size(value) + len(name) + 4
        if current and size + cost > budget:
            bodies.append(current)
            current, size = {}, 0
        current[name] = value
        size += cost

    for part in ("summary", "worst", "table"):
        if part in change:
            add(part, change[part])
    chunks = _row_chunks(change.get("rows", []), budget)
    for i, chunk in enumerate(chunks):
        add("rows", chunk)
        if i < len(chunks) - 1:  # the next chunk needs a message of its own
            bodies.append(current)
            current, size = {}, 0
    if "order" in change:
        add("order", change["order"])
    if current:
        bodies.append(current)
    return bodies


def _row_chunks(rows: list[dict[str, Any]], budget: int) -> list[list[dict[str, Any]]]:
    chunks: list[list[dict[str, Any]]] = []
    chunk: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        cost = _size(row) + 1
        if chunk and size + cost > budget:
            chunks.append(chunk)
            chunk, size = [], 0
        chunk.append(row)
        size += cost
    if chunk:
        chunks.append(chunk)
    return chunks


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())
