"""Loads the Lua scripts that sit next to this module (one file per atomic state change)."""

from functools import cache
from pathlib import Path

import redis
from redis.commands.core import Script

_LUA_DIR = Path(__file__).with_name("lua")


@cache
def _source(name: str) -> str:
    return (_LUA_DIR / f"{name}.lua").read_text(encoding="utf-8")


def script(client: redis.Redis, name: str) -> Script:
    """A registered script bound to ``client``; EVALSHA with automatic reload on NOSCRIPT."""
    return client.register_script(_source(name))
