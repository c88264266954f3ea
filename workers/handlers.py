"""Finding a handler: a subscription names it by dotted path or hands the callable itself."""

from __future__ import annotations

import importlib
from typing import cast

from lockstep.workers.errors import HandlerImportError
from lockstep.workers.message import Handler

# What a subscription may name as its handler: a dotted path (settings, JSON) or the
# callable itself (code).
HandlerSpec = str | Handler


def import_handler(spec: HandlerSpec) -> Handler:
    """The handler ``spec`` names: a callable is returned as it is; a string
    ``package.module.callable`` or ``package.module:callable`` is imported. Raises
    ``HandlerImportError`` naming the path and the reason."""
    if not isinstance(spec, str):
        if not callable(spec):
            raise HandlerImportError(f"handler {spec!r} is neither a dotted path nor callable")
        return spec
    path = spec
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


def handler_name(spec: HandlerSpec) -> str:
    """How events, cards and log lines name a handler: the dotted path as given, or a
    callable's ``module.qualname`` (for an object without a qualified name, e.g. a
    ``functools.partial`` or an instance with ``__call__``, its class's)."""
    if isinstance(spec, str):
        return spec
    named = spec if hasattr(spec, "__qualname__") else type(spec)
    module = getattr(named, "__module__", None) or "?"
    return f"{module}.{named.__qualname__}"
