"""Loads the Lua scripts that sit next to this module (one file per atomic state change).

A script whose header has a line ``-- Prelude: NAME`` gets ``lua/_NAME.lua`` put in front
of it, so code several scripts need is written once: ``fence``, the fence check (owner,
token, broker-side expiry) every fenced state change starts with (docs/fencing.md), and
``produce``, the append of a message with the next dense offset.
"""

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import redis
from redis.commands.core import Script
from redis.exceptions import AskError

from lockstep.workers.connection import execute_on_node, node_client

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


def run_batch(
    client: redis.Redis, script_: Script, calls: Sequence[tuple[Sequence[str], Sequence[Any]]]
) -> list[Any]:
    """Run ``script_`` once per ``(keys, args)`` in as few round trips as the server allows,
    replies in the order of ``calls``. Standalone: one pipeline. Redis Cluster, which
    refuses EVALSHA in its cross-slot pipelines: one pipeline per node, each call sent to
    the node serving its keys' slot; a call whose slot moved meanwhile (MOVED, ASK) is
    sent again through the cluster client, which follows the redirection. Each call must
    keep its own keys within one slot (docs/cluster.md)."""
    replies: list[Any] = [None] * len(calls)
    by_node: dict[redis.Redis, list[int]] = {}
    for index, (keys, _) in enumerate(calls):
        by_node.setdefault(node_client(client, keys[0]), []).append(index)
    for node, indexes in by_node.items():
        pipe = node.pipeline(transaction=False)
        for index in indexes:
            keys, args = calls[index]
            script_(keys=list(keys), args=list(args), client=pipe)
        for index, result in zip(indexes, execute_on_node(client, pipe), strict=True):
            if isinstance(result, AskError):  # MovedError is an AskError
                keys, args = calls[index]
                result = script_(keys=list(keys), args=list(args))  # follows the redirect
            elif isinstance(result, Exception):
                raise result
            replies[index] = result
    return replies
