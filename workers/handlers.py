"""Finding a handler by dotted path."""

from __future__ import annotations

import importlib
from typing import cast

from lockstep.workers.errors import HandlerImportError
from lockstep.workers.message import Handler


def import_handler(path: str) -> Handler:
    """``package.module.callable`` or ``package.module:callable``. Raises
    ``HandlerImportError`` naming the path and the reason."""
    module_name, sep, attr = path.replace(":", ".").rpartition(".")
    if not sep or not module_name or not attr:
        raise HandlerImportError(f"handler {path!r} is not a dotted path like 'pkg.mod.func'")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import-time failure is a configuration error
        raise HandlerImportError(f"handler {path!r}: cannot import {module_name!r}: {exc}") from exc
    target = getattr(module, attr, None)
    if target is None:
        raise HandlerImportError(f"handler {path!r}: module {module_name!r} has no {attr!r}")
    if not callable(target):
        raise HandlerImportError(f"handler {path!r} is not callable")
    return cast(Handler, target)
