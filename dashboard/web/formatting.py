"""How every page, report and notification writes a duration, a count and a rate. The
pages' scripts write them through ``static/format.js``, which must give the same text for
the same value."""

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


def count(value: Any) -> str:
    """``12345`` -> ``12,345``, ``2.25`` -> ``2.2`` (one decimal when not whole); ``—`` when
    unknown (None or empty)."""
    if value is None or value == "":
        return "—"
    number = float(value)
    return f"{number:,.0f}" if number == int(number) else f"{number:,.1f}"


def rate(value: Any) -> str:
    """Messages a second: ``12.0/s``, ``1,234.5/s``; below one, two decimals (``0.25/s``: a
    slow group must not read as ``0.0/s``); ``—`` when unknown."""
    if value is None or value == "":
        return "—"
    n = float(value)
    return f"{n:,.2f}/s" if 0 < n < 1 else f"{n:,.1f}/s"


def counted(value: int, singular: str, plural: str = "") -> str:
    """``1 stuck episode``, ``1,200 retries``: a count (as ``count`` writes it) with its
    noun in the right number (``plural``, or the singular with an s)."""
    return f"{count(value)} {singular if value == 1 else plural or singular + 's'}"


def subject(
    topic: str, group: str = "", queue: int | None = None, key: str = "", consumer: str = ""
) -> str:
    """``orders / billing / queue 5 / key order-100``: a subject as the pages write it
    (the overview's queues, the alerts pages' Subject column, every alert text, the
    analytics report's lines); the parts that are blank are left out, "" when all are."""
    parts = [topic, group, "" if queue is None else f"queue {queue}"]
    parts += [f"key {key}" if key else "", f"consumer {consumer}" if consumer else ""]
    return " / ".join(p for p in parts if p)
