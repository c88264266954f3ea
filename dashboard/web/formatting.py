"""How every page, report and notification writes a duration."""

from __future__ import annotations

from typing import Any


def duration(seconds: float) -> str:
    """``42 s``, ``4 min 5 s``, ``5 min``, ``2 h 13 min``, ``1 h``: for sentences an
    operator reads (a zero last part is left out)."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min" + (f" {s % 60} s" if s % 60 else "")
    return f"{s // 3600} h" + (f" {s % 3600 // 60} min" if s % 3600 // 60 else "")


def seconds(value: Any) -> str:
    """A duration in seconds: ``0.4 s``, ``42 s``, ``4 min 5 s``; ``—`` when unknown."""
    try:
        s = float(value)
    except (TypeError, ValueError):
        return "—"
    return f"{s:.1f} s" if s < 10 else duration(s)
