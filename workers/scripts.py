"""Loads the Lua scripts that sit next to this module (one file per atomic state change).

A script whose header has a line ``-- Prelude: NAME`` gets ``lua/_NAME.lua`` put in front
of it, so code several scripts need is written once: ``fence``, the fence check (owner,
token, broker-side expiry) every fenced state change starts with (docs/fencing.md), and
``produce``, the append of a message with the next dense offset.
"""

from functools import cache
from pathlib import Path

import redis
from redis.commands.core import Script

_LUA_DIR = Path(__file__).with_name("lua")
_PRELUDE_MARKER = "-- Prelude: "


@cache
def _read(name: str) -> str:
    return (_LUA_DIR / f"{name}.lua").read_text(encoding="utf-8")


@cache
def source(name: str) -> str:
    """The full source of script ``name``, with its prelude when its header asks for one."""
    text = _read(name)
    preludes = [
        line.removeprefix(_PRELUDE_MARKER).split()[0]
        for line in text.splitlines()
        if line.startswith(_PRELUDE_MARKER)
    ]
    return "\n".join([*(_read(f"_{prelude}") for prelude in preludes), text])


def script(client: redis.Redis, name: str) -> Script:
    """A registered script bound to ``client``; EVALSHA with automatic reload on NOSCRIPT."""
    return client.register_script(source(name))
