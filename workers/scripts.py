"""Loads the Lua scripts that sit next to this module (one file per atomic state change).

A script whose header has the line ``-- Prelude: fence`` gets ``lua/_fence.lua`` put in
front of it: the fence check (owner, token, broker-side expiry) that every fenced state
change starts with, written once (docs/fencing.md).
"""

from functools import cache
from pathlib import Path

import redis
from redis.commands.core import Script

_LUA_DIR = Path(__file__).with_name("lua")
_FENCE_MARKER = "-- Prelude: fence"


@cache
def _read(name: str) -> str:
    return (_LUA_DIR / f"{name}.lua").read_text(encoding="utf-8")


@cache
def source(name: str) -> str:
    """The full source of script ``name``, with its prelude when its header asks for one."""
    text = _read(name)
    if any(line.startswith(_FENCE_MARKER) for line in text.splitlines()):
        return _read("_fence") + "\n" + text
    return text


def script(client: redis.Redis, name: str) -> Script:
    """A registered script bound to ``client``; EVALSHA with automatic reload on NOSCRIPT."""
    return client.register_script(source(name))
