"""Filters for the reports page: the day's figures and their changes as an operator reads
them (counts with separators, shares as percentages, durations in words)."""

from __future__ import annotations

from typing import Any

from django import template

from lockstep.dashboard.web.formatting import count, seconds

register = template.Library()
DASH = "—"
MINUS = "\u2212"  # a real minus sign: it lines up with the plus in a column of changes


register.filter("count", count)


@register.filter
def percent(value: Any) -> str:
    """A share (0..1) as a percentage, with the decimals small shares need:
    ``0.5`` -> ``50%``, ``0.0421`` -> ``4.2%``, ``0.00042`` -> ``0.04%``."""
    if value is None or value == "":
        return DASH
    pct = float(value) * 100
    if pct == 0 or abs(pct) >= 10:
        return f"{pct:.0f}%"
    return f"{pct:.1f}%" if abs(pct) >= 1 else f"{pct:.2f}%"


@register.filter
def times(value: Any) -> str:
    """A ratio as a multiple: ``3.25`` -> ``3.2`` and a multiplication sign."""
    if value is None or value == "":
        return DASH
    return f"{float(value):.1f}\u00d7"


@register.filter
def figure(value: Any, unit: str) -> str:
    """A headline figure in its unit (``s``, ``ratio``, or a count)."""
    if value is None:
        return DASH
    if unit == "s":
        return seconds(value)
    if unit == "ratio":
        return percent(value)
    return count(value)


@register.filter
def change(delta: Any, unit: str) -> str:
    """A figure's change from an earlier day, signed (a real minus sign): ``+4 min 5 s``,
    ``-12``, ``+0.02 pp`` (a share's change in percentage points), ``±0`` when none."""
    if delta is None:
        return DASH
    d = float(delta)
    if d == 0:
        return "±0"
    sign = "+" if d > 0 else MINUS
    if unit == "s":
        return sign + seconds(abs(d))
    if unit == "ratio":
        points = abs(d) * 100
        decimals = 1 if points >= 1 else 2 if points >= 0.01 else 3
        return f"{sign}{points:.{decimals}f} pp"
    return sign + count(abs(d))


@register.filter
def relative(value: Any) -> str:
    """A relative change as a signed percentage: ``0.25`` -> ``+25%``."""
    if value is None:
        return ""
    pct = float(value) * 100
    sign = "+" if pct > 0 else MINUS if pct < 0 else "±"
    return f"{sign}{abs(pct):.0f}%" if abs(pct) >= 1 or pct == 0 else f"{sign}{abs(pct):.1f}%"
