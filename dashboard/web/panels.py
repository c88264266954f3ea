"""Panels one feature app shows on another's page (``registry.Registry``).

The page that shows such panels asks for them by what the page is about (for now: a
consumer group's dead-letter list). A panel is a function of that subject returning the
template's data, or ``None`` where it has nothing to show.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lockstep.dashboard.web.registry import Registry

GroupPanel = Callable[[str], dict[str, Any] | None]

# Shown as ``panels.<name>`` on a group's dead-letter list.
GROUP_PANELS: Registry[GroupPanel] = Registry("group panel")


def group_panels(group: str) -> dict[str, dict[str, Any]]:
    """Every registered panel's data for ``group``, by name; panels answering ``None``
    are left out."""
    found = {name: panel(group) for name, panel in GROUP_PANELS}
    return {name: data for name, data in found.items() if data is not None}
