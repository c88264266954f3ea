"""Sentences an operator reads: durations and shortened error texts."""

from __future__ import annotations


def duration(seconds: float) -> str:
    """``42 s``, ``4 min 5 s``, ``2 h 13 min``."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def shorten(text: str, limit: int = 200) -> str:
    """The first line of ``text``, cut to ``limit`` characters (with an ellipsis)."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
