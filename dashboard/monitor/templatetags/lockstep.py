"""Filters for the monitor pages: epoch milliseconds and durations as an operator reads
them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django import template

from lockstep.dashboard.monitor.health import duration

register = template.Library()


@register.filter
def from_ms(value: Any) -> datetime | None:
    """Epoch milliseconds as an aware datetime (for ``|date``); None for empty values."""
    try:
        ms = float(value)
    except (TypeError, ValueError):
        return None
    return datetime.fromtimestamp(ms / 1000.0, tz=UTC) if ms > 0 else None


@register.filter
def seconds(value: Any) -> str:
    """A duration in seconds: ``0.4 s``, ``42 s``, ``4 min 5 s``; ``—`` when unknown."""
    try:
        s = float(value)
    except (TypeError, ValueError):
        return "—"
    return f"{s:.1f} s" if s < 10 else duration(s)


@register.filter
def ms_as_seconds(value: Any) -> str:
    try:
        return seconds(float(value) / 1000.0)
    except (TypeError, ValueError):
        return "—"


@register.filter
def safe_json(value: Any, limit: int = 300) -> str:
    """Compact JSON of an event's details, cut at ``limit`` characters (autoescaped)."""
    text = json.dumps(value, separators=(",", ":"), default=str, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@register.filter
def words(value: Any) -> str:
    """``dead_lettered`` -> ``dead lettered``."""
    return str(value).replace("_", " ")


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    """``mapping[key]``, or None: a dict lookup by a variable (``{{ counts|get_item:name }}``)
    that no key named like a dict method can shadow."""
    try:
        return mapping.get(key)
    except AttributeError:
        return None
