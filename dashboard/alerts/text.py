"""Sentences an operator reads: durations (as on the monitor pages) and shortened error
texts."""

from __future__ import annotations

from lockstep.dashboard.monitor.health import duration

__all__ = ["duration", "shorten"]


def shorten(text: str, limit: int = 200) -> str:
    """The first line of ``text``, cut to ``limit`` characters (with an ellipsis)."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
