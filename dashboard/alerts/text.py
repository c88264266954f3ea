"""Sentences and labels an operator reads: subjects and durations (as on the monitor
pages), shortened error texts, and an alert's details as labelled values with their units
(the page and every channel show them so; the payload keeps the raw keys,
docs/alerts-delivery.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lockstep.dashboard.web.formatting import duration, subject
from lockstep.workers.refs import GroupQueue

__all__ = [
    "detail_label",
    "detail_rows",
    "detail_value",
    "duration",
    "queue_subject",
    "shorten",
    "subject",
    "without_durations",
]

# Keys whose words alone would read wrong; every other key reads as its words, less a
# unit suffix (``_s``, ``_ms``) that the value then carries.
LABELS = {
    "dlq_id": "dead letter ID",
    "pid": "process ID",
    "for_s": "condition held for",
    "time_lag_s": "time lag",
    "window_s": "window",
    "heartbeat_age_s": "last heartbeat",
    "threshold": "threshold (count)",
}
UNITS = {"_s": 1.0, "_ms": 0.001}


# What ``duration`` and ``seconds_text`` write: ``42 s``, ``0.4 s``, ``4 min 5 s``, ``2 h``.
DURATION = re.compile(r"\b\d+(?:\.\d+)? (?:s|min|h)(?: \d+ (?:s|min))?\b")


def queue_subject(at: GroupQueue) -> str:
    """``orders / billing / queue 5``: a group's queue as the pages name it."""
    return subject(at.topic, at.group, at.queue)


def without_durations(text: str) -> str:
    """``text`` with every duration (as ``duration`` writes them) blanked: two summaries
    equal under it state the same figures but for how long things have lasted."""
    return DURATION.sub("…", text)


def shorten(text: str, limit: int = 200) -> str:
    """The first line of ``text``, cut to ``limit`` characters (with an ellipsis)."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _unit(key: str) -> tuple[str, float | None]:
    """``key`` less its unit suffix, and the factor to seconds (None: no unit)."""
    for suffix, factor in UNITS.items():
        if key.endswith(suffix):
            return key[: -len(suffix)], factor
    return key, None


def detail_label(key: str) -> str:
    """``window_s`` -> ``window``, ``new_dead_letters`` -> ``new dead letters``."""
    return LABELS.get(key) or _unit(key)[0].replace("_", " ")


def seconds_text(s: float) -> str:
    """``0.4 s``, ``42 s``, ``5 min``, ``4 min 5 s``: a duration with its unit."""
    return f"{s:.1f} s" if s < 10 and s != int(s) else duration(s)


def detail_value(key: str, value: Any) -> str:
    """``value`` of ``key`` as an operator reads it: durations with their unit, lists
    joined, ``—`` for nothing."""
    if value is None or value == "":
        return "—"
    _, factor = _unit(key)
    if factor is not None and isinstance(value, int | float) and not isinstance(value, bool):
        return seconds_text(float(value) * factor)
    if isinstance(value, list | tuple):
        return ", ".join(str(v).replace("_", " ") for v in value) or "—"
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return str(value)


def detail_rows(details: Any) -> list[tuple[str, str]]:
    """An alert's details as (label, value) rows, in key order; anything but a mapping
    is one ``details`` row."""
    if not isinstance(details, Mapping):
        return [("details", str(details))]
    return [(detail_label(str(k)), detail_value(str(k), v)) for k, v in sorted(details.items())]
