"""Operator actions on dead letters: replay (keeping the key's order) and discard. Reading
them (list, get, counts) is ``workers.inspect``'s.

Both actions are idempotent (a dead letter already replayed or discarded changes nothing
and reports ``missing`` / False) and leave an audit event in the event log. How a replay
keeps order (docs/semantics.md, "Replay and discard"):
- a dead letter that holds its key (``after_dlq = hold``) goes back *in place*: it runs
  before the key's parked messages, which then run in their original order;
- any other (queue ordering, ``continue``, a key no longer held by it) is *re-published* to
  the end of its queue with headers linking it to its dead letter (``lockstep-replay-of``,
  ``lockstep-replay-id``, ``lockstep-original-offset``). Replaying several messages of one
  key in their original offset order keeps their order among themselves.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import redis

from lockstep.workers import events as ev
from lockstep.workers import keys
from lockstep.workers.config import Limits
from lockstep.workers.inspect.clock import redis_now_ms
from lockstep.workers.inspect.dead_letters import DeadLetter, get_dead_letter
from lockstep.workers.message import (
    ORIGINAL_OFFSET_HEADER,
    REPLAY_ID_HEADER,
    REPLAY_OF_HEADER,
    serialize,
)
from lockstep.workers.refs import QueueRef
from lockstep.workers.scripts import script


class ReplayOutcome(StrEnum):
    IN_PLACE = "in_place"  # back at its key's place, ahead of the key's parked messages
    REPUBLISHED = "republished"  # appended to its queue, linked by headers
    MISSING = "missing"  # not (or no longer) a dead letter: nothing done


@dataclass(frozen=True)
class Replayed:
    outcome: ReplayOutcome
    offset: int | None = None  # the new offset when re-published

    @property
    def done(self) -> bool:
        return self.outcome is not ReplayOutcome.MISSING


def replay(
    client: redis.Redis,
    ref: QueueRef,
    group: str,
    dlq_id: str,
    *,
    replay_id: str = "",
    actor: str = "",
) -> Replayed:
    """Replay dead letter ``dlq_id`` (see the module docstring for where it goes).
    ``replay_id`` (the operator's request) travels with the message and its events."""
    letter = get_dead_letter(client, ref, group, dlq_id)
    if letter is None:
        return Replayed(ReplayOutcome.MISSING)
    headers = {
        **letter.headers_dict,
        REPLAY_OF_HEADER: dlq_id,
        REPLAY_ID_HEADER: replay_id,
        ORIGINAL_OFFSET_HEADER: letter.offset,
    }
    message = letter.as_message()
    message.headers = headers
    reply = _release(
        client,
        letter,
        "replay",
        member=serialize(message),
        headers=json.dumps(headers, separators=(",", ":"), default=str),
    )
    if not reply:
        return Replayed(ReplayOutcome.MISSING)
    kind, offset = int(reply[0]), int(reply[1])
    replayed = (
        Replayed(ReplayOutcome.IN_PLACE)
        if kind == 1
        else Replayed(ReplayOutcome.REPUBLISHED, offset)
    )
    _audit(
        client,
        letter,
        ev.DEAD_LETTER_REPLAYED,
        actor,
        {
            "replay_id": replay_id,
            "outcome": replayed.outcome.value,
            "new_offset": replayed.offset,
        },
    )
    return replayed


def discard(
    client: redis.Redis,
    ref: QueueRef,
    group: str,
    dlq_id: str,
    *,
    actor: str = "",
    reason: str = "",
) -> bool:
    """Drop the dead letter; a key it holds is released and its parked messages run in
    order. The key stays ``releasing`` until the queue's consumer has drained (or found
    empty) its parked set, even with nothing parked."""
    letter = get_dead_letter(client, ref, group, dlq_id)
    if letter is None or not _release(client, letter, "discard"):
        return False
    _audit(client, letter, ev.DEAD_LETTER_DISCARDED, actor, {"reason": reason})
    return True


def _release(
    client: redis.Redis, letter: DeadLetter, action: str, *, member: str = "", headers: str = ""
) -> Any:
    ref, group = letter.ref, letter.group
    return script(client, "release_dead_letter")(
        keys=[
            keys.dead_letters(ref, group),
            keys.parked_keys(ref, group),
            keys.parked_messages(ref, group, letter.key),
            *keys.produce_keys(ref),
        ],
        args=[
            letter.id,
            action,
            letter.key,
            letter.offset,
            member,
            headers,
            Limits.from_env().stream_maxlen,
        ],
    )


def _audit(
    client: redis.Redis, letter: DeadLetter, type_: str, actor: str, details: dict[str, Any]
) -> None:
    event = ev.Event(
        type_,
        redis_now_ms(client),
        letter.topic,
        letter.group,
        letter.queue,
        letter.key,
        details={"dlq_id": letter.id, "offset": letter.offset, "actor": actor, **details},
    )
    ev.append(client, [event])


@dataclass(frozen=True)
class Target:
    """One dead letter to act on, as an action request names it."""

    ref: QueueRef
    group: str
    dlq_id: str
    offset: int  # its original offset: bulk replays run in this order per queue


def in_replay_order(targets: Iterable[Target]) -> list[Target]:
    """The order a bulk replay must follow so each key's messages go back in their
    original offset order: by queue, then original offset (a key lives in one queue)."""
    return sorted(targets, key=lambda t: (t.ref.topic, t.ref.queue, t.group, t.offset, t.dlq_id))


def replay_many(
    client: redis.Redis,
    targets: Iterable[Target],
    *,
    replay_id: str,
    actor: str = "",
    per_second: float = 0.0,
    cancelled: Callable[[], bool] = lambda: False,
    on_outcome: Callable[[Target, Replayed], None] = lambda _t, _r: None,
) -> int:
    """Replay ``targets`` one by one in ``in_replay_order``, at most ``per_second`` a
    second (0: no limit), until done or ``cancelled()`` says stop (checked before each);
    the rest are left untouched. ``on_outcome`` hears every outcome. Returns how many were
    attempted."""
    pace = Pace(per_second)
    attempted = 0
    for target in in_replay_order(targets):
        if cancelled():
            break
        pace.wait()
        outcome = replay(
            client, target.ref, target.group, target.dlq_id, replay_id=replay_id, actor=actor
        )
        attempted += 1
        on_outcome(target, outcome)
    return attempted


class Pace:
    """At most ``per_second`` steps a second, evenly spaced (0: no limit)."""

    def __init__(self, per_second: float) -> None:
        self._interval = 1.0 / per_second if per_second > 0 else 0.0
        self._next = 0.0

    def wait(self) -> None:
        if not self._interval:
            return
        now = time.monotonic()
        if self._next > now:
            time.sleep(self._next - now)
        self._next = max(now, self._next) + self._interval
