"""Operator actions on dead letters: replay (back to the key's place) and discard. Reading
them (list, get, counts) is ``workers.inspect``'s.

Both actions are idempotent (a dead letter already replayed or discarded changes
nothing and returns False) and leave an audit event in the event log.
"""

from __future__ import annotations

import redis

from workers import events as ev
from workers import keys
from workers.inspect.clock import redis_now_ms
from workers.inspect.dead_letters import get_dead_letter
from workers.message import serialize
from workers.refs import QueueRef
from workers.scripts import script


def replay(client: redis.Redis, ref: QueueRef, group: str, dlq_id: str, actor: str = "") -> bool:
    """Put the dead letter back at its key's place; the owning consumer runs it, then the
    key's parked messages, in offset order."""
    return _release(client, ref, group, dlq_id, "replay", actor)


def discard(client: redis.Redis, ref: QueueRef, group: str, dlq_id: str, actor: str = "") -> bool:
    """Drop the dead letter; a held key is released and its parked messages run in order.
    The key stays ``releasing`` until the queue's consumer has drained (or found empty) its
    parked set, even with nothing parked."""
    return _release(client, ref, group, dlq_id, "discard", actor)


def _release(
    client: redis.Redis, ref: QueueRef, group: str, dlq_id: str, action: str, actor: str
) -> bool:
    letter = get_dead_letter(client, ref, group, dlq_id)
    if letter is None:
        return False
    member = serialize(letter.as_message()) if action == "replay" else ""
    done = bool(
        script(client, "release_dead_letter")(
            keys=[
                keys.dead_letters(ref, group),
                keys.parked_keys(ref, group),
                keys.parked_messages(ref, group, letter.key),
            ],
            args=[dlq_id, action, letter.key, letter.offset, member],
        )
    )
    if done:
        event = ev.Event(
            ev.DEAD_LETTER_REPLAYED if action == "replay" else ev.DEAD_LETTER_DISCARDED,
            redis_now_ms(client),
            ref.topic,
            group,
            ref.queue,
            letter.key,
            details={"dlq_id": dlq_id, "offset": letter.offset, "actor": actor},
        )
        ev.append(client, [event])
    return done
