"""Filters for the monitor pages: times, epoch milliseconds and durations as an operator
reads them. Every time a page shows goes through ``when`` (and the scripts' times through
``static/time.js``): 24-hour ``YYYY-MM-DD HH:MM:SS`` in the viewer's zone, UTC on hover."""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from lockstep.dashboard.web import time_zone
from lockstep.dashboard.web.formatting import count, rate, seconds

register = template.Library()


@register.filter
def from_ms(value: Any) -> datetime | None:
    """Epoch milliseconds as an aware datetime (for ``|date``); None for empty values."""
    try:
        ms = float(value)
    except (TypeError, ValueError):
        return None
    return datetime.fromtimestamp(ms / 1000.0, tz=UTC) if ms > 0 else None


def _instant(value: Any) -> datetime | None:
    """A datetime, epoch milliseconds or an ISO 8601 text as an aware datetime (naive
    values are UTC, as the runtime writes them); None when it is none of these."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return from_ms(value)
    text = str(value or "").strip()
    if not text:
        return None
    if text.lstrip("-").replace(".", "", 1).isdigit():
        return from_ms(text)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _stamp(moment: datetime, precision: str) -> str:
    text = moment.strftime("%Y-%m-%d %H:%M:%S")
    if precision == "ms":
        return f"{text}.{moment.microsecond // 1000:03d}"
    return text[:16] if precision == "min" else text


@register.filter
def when(value: Any, precision: str = "s") -> SafeString | str:
    """A ``<time>`` in the viewer's zone (24-hour; ``precision`` ``s``, ``ms`` or ``min``)
    whose ``title`` is the same instant in UTC; ``—`` when there is no time."""
    moment = _instant(value)
    if moment is None:
        return "—"
    utc = moment.astimezone(UTC)
    return format_html(
        '<time datetime="{}" title="{} UTC">{}</time>',
        utc.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        _stamp(utc, precision),
        _stamp(timezone.localtime(moment), precision),
    )


@register.simple_tag
def viewer_zone() -> str:
    """The zone times are shown and typed in (the user's choice, else UTC)."""
    return timezone.get_current_timezone_name()


@register.simple_tag
def time_zone_options() -> SafeString:
    """The ``<option>`` of every zone a user may choose, the viewer's selected."""
    return _zone_options(timezone.get_current_timezone_name())


@functools.lru_cache(maxsize=64)
def _zone_options(current: str) -> SafeString:
    # Every page's header has them: some 400 options, rendered once per chosen zone
    # instead of once per page by a template loop.
    return format_html_join(
        "",
        "<option{}>{}</option>",
        ((" selected" if name == current else "", name) for name in time_zone.zone_names()),
    )


@register.simple_tag
def time_input_pattern() -> str:
    return time_zone.INPUT_PATTERN


register.filter("seconds", seconds)
register.filter("count", count)
register.filter("rate", rate)


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
