"""What one feature app contributes to another's output without either importing the
other (docs/architecture.md, "Dependencies point one way"): the contributing app adds to
a ``Registry`` in its ``AppConfig.ready()``; the reading app walks it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Named entries in the order they were added (``INSTALLED_APPS`` order)."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> None:
        """Add ``entry`` as ``name``. A name is taken once; adding the same entry again
        is accepted (``ready()`` may run more than once in tests)."""
        known = self._entries.get(name)
        if known is not None and known is not entry:
            raise ValueError(f"a {self._what} named {name!r} is registered already")
        self._entries[name] = entry

    def remove(self, name: str) -> None:
        self._entries.pop(name, None)

    def __iter__(self) -> Iterator[tuple[str, T]]:
        return iter(list(self._entries.items()))

    def __contains__(self, name: object) -> bool:
        return name in self._entries
