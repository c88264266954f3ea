"""Loads the Lua scripts that sit next to this module (one file per atomic state change).

A script whose header has a line ``-- Prelude: NAME`` gets ``lua/_NAME.lua`` put in front
of it, so code several scripts need is written once: ``fence``, the fence check (owner,
token, broker-side expiry) every fenced state change starts with (docs/fencing.md), and
``produce``, the append of a message with the next dense offset.
"""

import threading
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import redis
from redis.commands.core import Script
from redis.exceptions import NoScriptError

from lockstep.workers.connection import cluster_of, execute_following, node_client

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
    client: redis.Redis,
    script_: Script,
    calls: Sequence[tuple[Sequence[str], Sequence[Any]]],
    *,
    node_wait_s: float | None = None,
) -> list[Any]:
    """Run ``script_`` once per ``(keys, args)`` in as few round trips as the server allows,
    replies in the order of ``calls``. Standalone: one pipeline. Redis Cluster, which
    refuses EVALSHA in its cross-slot pipelines: one pipeline per node, each call sent to
    the node serving its keys' slot; a call whose slot moved meanwhile (MOVED, ASK) is
    sent again through the cluster client, which follows the redirection. Each call must
    keep its own keys within one slot (docs/cluster.md).

    ``node_wait_s`` (a cluster): the nodes are sent to at once, and a node that cannot be
    reached, or has not answered within that many seconds, gives its error as the reply
    of each of its calls instead of raising: a dead or slow node fails and holds up only
    its own calls (docs/cluster.md, "Renewals per node"); its calls may still run. Errors
    of single calls are raised either way."""
    by_node: dict[redis.Redis, list[int]] = {}
    for index, (keys, _) in enumerate(calls):
        by_node.setdefault(node_client(client, keys[0]), []).append(index)
    replies: list[Any] = [None] * len(calls)
    if node_wait_s is None or cluster_of(client) is None:
        for node, indexes in by_node.items():
            found = _run_on_node(client, script_, calls, node, indexes)
            for index, reply in zip(indexes, found, strict=True):
                replies[index] = reply
        return replies
    answers = _run_on_nodes_at_once(client, script_, calls, by_node, node_wait_s)
    for node, indexes in by_node.items():
        answer = answers[node] if node in answers else _unanswered(node, node_wait_s)
        if isinstance(answer, (redis.ConnectionError, redis.TimeoutError)):
            answer = [answer] * len(indexes)
        elif isinstance(answer, Exception):
            raise answer
        for index, reply in zip(indexes, answer, strict=True):
            replies[index] = reply
    return replies


def _run_on_nodes_at_once(
    client: redis.Redis,
    script_: Script,
    calls: Sequence[tuple[Sequence[str], Sequence[Any]]],
    by_node: dict[redis.Redis, list[int]],
    wait_s: float,
) -> dict[redis.Redis, list[Any] | Exception]:
    """Each node's replies (or its exception), for the nodes that answered within
    ``wait_s``. A node's thread that answers later writes into a dict nobody reads."""
    answers: dict[redis.Redis, list[Any] | Exception] = {}
    lock = threading.Lock()

    def send(node: redis.Redis, indexes: list[int]) -> None:
        answer: list[Any] | Exception
        try:
            answer = _run_on_node(client, script_, calls, node, indexes)
        except Exception as exc:
            answer = exc
        with lock:
            answers[node] = answer

    threads = [
        threading.Thread(target=send, args=(node, indexes), daemon=True)
        for node, indexes in by_node.items()
    ]
    deadline = time.monotonic() + wait_s
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    with lock:
        return dict(answers)


class NodeLate(redis.TimeoutError):
    """A node had not answered within ``run_batch``'s ``node_wait_s``: reachable, maybe
    only slow, and its calls may still run."""


def _unanswered(node: redis.Redis, wait_s: float) -> NodeLate:
    where = node.get_connection_kwargs()
    return NodeLate(f"{where.get('host')}:{where.get('port')} did not answer within {wait_s:g} s")


def _run_on_node(
    client: redis.Redis,
    script_: Script,
    calls: Sequence[tuple[Sequence[str], Sequence[Any]]],
    node: redis.Redis,
    indexes: list[int],
) -> list[Any]:
    """The replies of ``calls[indexes]``, all served by ``node``, from one pipeline."""
    replies = pipelined(client, node, script_, [calls[index] for index in indexes])
    for result in replies:
        if isinstance(result, Exception):
            raise result
    return replies


def pipelined(
    client: redis.Redis,
    node: redis.Redis,
    script_: Script,
    calls: Sequence[tuple[Sequence[Any], Sequence[Any]]],
) -> list[Any]:
    """Each of ``calls`` (keys, args) run as ``script_`` in one pipeline on ``node`` (a
    ``connection.node_client`` of ``client``), each reply or error in its place; a call
    whose slot moved is sent again through ``client`` (``execute_following``). Calls that
    the server refused for not knowing the script (a restart, SCRIPT FLUSH: none of them
    ran) are sent again once it is loaded. EVALSHA is sent as such: redis-py's pipeline
    would ask SCRIPT EXISTS first for a script called in it, a round trip more on every
    batch."""

    def send(indexes: list[int]) -> list[Any]:
        pipe = node.pipeline(transaction=False)
        for i in indexes:
            keys, args = calls[i]
            pipe.evalsha(script_.sha, len(keys), *keys, *args)

        def resend(n: int) -> Any:
            keys, args = calls[indexes[n]]
            return script_(keys=list(keys), args=list(args))

        return execute_following(client, pipe, resend)

    replies = send(list(range(len(calls))))
    missing = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
    if missing:
        node.script_load(script_.script)
        for i, reply in zip(missing, send(missing), strict=True):
            replies[i] = reply
    return replies
