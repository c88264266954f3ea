"""Calls of one Lua script from many threads, sent together (docs/reading.md, "Commits").

A consumer process stepping hundreds of queues commits each of them on its own; every
commit is a script call and so a round trip, and on a busy Redis the round trips, not the
work, set the pace. ``CoalescedScript`` sends the calls that meet in time as one
pipeline: a thread that calls while no batch is in flight sends its call at once; the
threads that call meanwhile queue theirs and wait, and the first of them sends all that
queued once the batch in flight is answered. Alone, a call costs what it did.

Each call is still its own script run, atomic, with its own reply or error: coalescing
changes when a call is sent, never what it does. A failure of the whole round trip (Redis
unreachable) is the error of every call in it.

On a Redis Cluster, ``NodeCoalescedScript`` coalesces per node: the calls to one node go
together on that node's connection, so a slow node holds up only its own calls. A call
whose slot moved meanwhile (MOVED, ASK) is sent again through the cluster client, which
follows the redirection.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import redis
from redis.commands.core import Script

from lockstep.workers.connection import node_client
from lockstep.workers.scripts import pipelined


@dataclass(eq=False)
class _Call:
    keys: Sequence[Any]
    args: Sequence[Any]
    done: threading.Event = field(default_factory=threading.Event)
    reply: Any = None
    error: Exception | None = None
    lead: bool = False  # woken to send the next batch, not with a reply


class CoalescedScript:
    """``script(keys=..., args=...)`` as redis-py's ``Script``, coalesced (module
    docstring)."""

    def __init__(
        self, client: redis.Redis, script_: Script, cluster: redis.Redis | None = None
    ) -> None:
        """``client``: where the calls go; on a cluster a node's own client, and
        ``cluster`` the cluster client (to follow a redirection, and to re-read the
        layout after a failed connection)."""
        self.client = client
        self.script = script_
        self.cluster = cluster
        self._mutex = threading.Lock()
        self._queued: list[_Call] = []
        self._sending = False

    def __call__(self, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        call = _Call(keys, args)
        with self._mutex:
            self._queued.append(call)
            lead = not self._sending
            self._sending = True
        if not lead:
            call.done.wait()
            lead = call.lead
        if lead:
            self._send()
        if call.error is not None:
            raise call.error
        return call.reply

    def _send(self) -> None:
        """Send every queued call (the sender's own among them) as one pipeline, hand the
        replies out, and pass the sending on to the first call queued meanwhile."""
        with self._mutex:
            batch, self._queued = self._queued, []
        replies: list[Any] | None = None
        try:
            replies = self._execute(batch)
        except Exception as exc:
            replies = [exc] * len(batch)
        finally:
            # Also when the sender is interrupted: no caller may wait for good.
            if replies is None:
                replies = [RuntimeError("the batch was not sent")] * len(batch)
            self._hand_out(batch, replies)

    def _hand_out(self, batch: list[_Call], replies: list[Any]) -> None:
        with self._mutex:
            successor = self._queued[0] if self._queued else None
            if successor is None:
                self._sending = False
            else:
                successor.lead = True
        for call, reply in zip(batch, replies, strict=True):
            if isinstance(reply, Exception):
                call.error = reply
            else:
                call.reply = reply
            call.done.set()
        if successor is not None:
            successor.done.set()

    def _execute(self, batch: list[_Call]) -> list[Any]:
        calls = [(call.keys, call.args) for call in batch]
        client = self.client if self.cluster is None else self.cluster
        return pipelined(client, self.client, self.script, calls)


class NodeCoalescedScript:
    """``CoalescedScript`` on a Redis Cluster: one per node, each call sent to the node
    serving its first key's slot (module docstring)."""

    def __init__(self, cluster: redis.Redis, script_: Script) -> None:
        self.cluster = cluster
        self.script = script_
        self._mutex = threading.Lock()
        self._by_node: dict[redis.Redis, CoalescedScript] = {}

    def __call__(self, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        node = node_client(self.cluster, str(keys[0]))
        with self._mutex:
            coalesced = self._by_node.get(node)
            if coalesced is None:
                coalesced = CoalescedScript(node, self.script, self.cluster)
                self._by_node[node] = coalesced
        return coalesced(keys, args)
