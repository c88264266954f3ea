"""Where one message is, for one consumer group. First match wins:

- ``dead_lettered``: in the group's dead-letter stream;
- ``parked``: in its held key's parked set (``after_dlq = hold``, or a replay waiting);
- ``retrying``: the message the group's consumer is retrying (queue ordering: the queue's
  head at the committed offset; key ordering: the offset its blocked key is stuck at);
- ``handled``: below the committed offset (low-water mark) or in a completed range above;
- ``pending``: not handled yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict

import redis

from lockstep.workers import keys
from lockstep.workers.inspect.dead_letters import DeadLetter
from lockstep.workers.inspect.held import Hold, parked_offsets
from lockstep.workers.inspect.state import GroupState, queue_state
from lockstep.workers.message import Message
from lockstep.workers.offset_tracker import decode_ranges
from lockstep.workers.redis_types import as_bytes
from lockstep.workers.refs import QueueRef


class DeadLettered(TypedDict):
    group: str
    state: Literal["dead_lettered"]
    dlq_id: str
    error: str
    reconsume_times: int
    dead_at_ms: int


class Parked(TypedDict):
    group: str
    state: Literal["parked"]
    hold: str  # held | releasing
    blocked_by_offset: int | None  # the offset of the dead letter holding the key
    dlq_id: str | None


class Retrying(TypedDict):
    """``since_ms`` and ``waiting`` (messages of the key behind it) only under key
    ordering."""

    group: str
    state: Literal["retrying"]
    retries: int
    error: str
    since_ms: NotRequired[int]
    waiting: NotRequired[int]


class Handled(TypedDict):
    group: str
    state: Literal["handled"]


class Pending(TypedDict):
    group: str
    state: Literal["pending"]
    ahead: int  # offsets between the committed offset and the message


MessageState = DeadLettered | Parked | Retrying | Handled | Pending


@dataclass(frozen=True)
class GroupOffsets:
    """What one group's state says about the offsets of one queue."""

    group: str
    live: GroupState
    completed: list[tuple[int, int]]  # inclusive ranges done above the committed offset
    parked: dict[int, Hold]  # offset -> its held key's hold

    def state_of(self, message: Message, letter: DeadLetter | None) -> MessageState:
        """The state of ``message``; ``letter`` is the group's dead letter of it, if any."""
        if letter is not None:
            return {
                "group": self.group,
                "state": "dead_lettered",
                "dlq_id": letter.id,
                "error": letter.error,
                "reconsume_times": letter.reconsume_times,
                "dead_at_ms": letter.dead_at_ms,
            }
        if message.offset in self.parked:
            hold = self.parked[message.offset]
            return {
                "group": self.group,
                "state": "parked",
                "hold": hold["state"],
                "blocked_by_offset": hold["offset"],
                "dlq_id": hold["dlq_id"],
            }
        return self._retrying(message) or self._handled_or_pending(message.offset)

    def _retrying(self, m: Message) -> Retrying | None:
        g = self.live
        for b in g.get("blocked_keys") or []:
            if b.get("key") == m.key and b.get("offset") == m.offset:
                return {
                    "group": self.group,
                    "state": "retrying",
                    "retries": b.get("retries", 0),
                    "error": b.get("error", ""),
                    "since_ms": b.get("since_ms", 0),
                    "waiting": b.get("waiting", 0),
                }
        queue_head = "blocked_keys" not in g and m.offset == g["committed_offset"]
        if queue_head and g["retries"] > 0:
            return {
                "group": self.group,
                "state": "retrying",
                "retries": g["retries"],
                "error": g["last_error"],
            }
        return None

    def _handled_or_pending(self, offset: int) -> Handled | Pending:
        committed = self.live["committed_offset"]
        if offset < committed or any(a <= offset <= b for a, b in self.completed):
            return {"group": self.group, "state": "handled"}
        return {"group": self.group, "state": "pending", "ahead": max(0, offset - committed)}


def group_offsets(client: redis.Redis, ref: QueueRef, groups: list[str]) -> list[GroupOffsets]:
    """One ``GroupOffsets`` per group of ``groups`` (each must be a group of the topic)."""
    live = {g["group"]: g for g in queue_state(client, ref)["groups"]}
    pipe = client.pipeline(transaction=False)
    for group in groups:
        pipe.hget(keys.offset(ref, group), "completed")
    completed = [as_bytes(raw or b"").decode() for raw in pipe.execute()]
    return [
        GroupOffsets(group, live[group], decode_ranges(done), parked_offsets(client, ref, group))
        for group, done in zip(groups, completed, strict=True)
    ]
