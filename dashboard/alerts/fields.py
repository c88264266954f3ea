"""Reading the alert pages' form fields and ids: bad input is ``BadParameter`` (400), an
id that cannot be one ``NotFound`` (404)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockstep.dashboard.web.views import BadParameter, NotFound, refuse_nul


def text(params: Mapping[str, str], name: str, max_length: int = 255) -> str:
    value = (params.get(name) or "").strip()
    if len(value) > max_length:
        raise BadParameter(f"{name} is longer than {max_length} characters")
    refuse_nul(value, name)
    return value


def choice(params: Mapping[str, str], name: str, allowed: Any, default: str = "") -> str:
    value = text(params, name) or default
    if value and value not in allowed:
        raise BadParameter(f"{name} must be one of: {', '.join(sorted(allowed))}; got {value!r}")
    return value


def flag(params: Mapping[str, str], name: str) -> bool:
    return (params.get(name) or "").strip().lower() in ("1", "on", "true", "yes")


def row_id(raw: str, what: str) -> int:
    """An id from the URL or a form; ``NotFound`` when it cannot be one."""
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 18:  # "²".isdigit() too
        raise NotFound(f"no {what} {raw[:40]!r}")
    return int(raw)
