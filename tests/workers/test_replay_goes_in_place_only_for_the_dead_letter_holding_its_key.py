"""Under ``after_dlq = hold`` a replay goes back *in place* only for the dead letter that
holds its key; an older dead letter of the same key is re-published instead, and the
hold stays with the dead letter that owns it (a replay never releases another's hold)."""

from __future__ import annotations

import pytest
import redis

from lockstep.workers import create_topic, keys
from lockstep.workers.broker import Broker, dead_letter_entry
from lockstep.workers.config import AfterDlq, Ordering, Subscription
from lockstep.workers.dead_letters import ReplayOutcome, replay
from lockstep.workers.inspect import holds, parked_messages
from lockstep.workers.message import Message
from lockstep.workers.refs import QueueRef

pytestmark = pytest.mark.on_cluster

GROUP, KEY = "mailer", "order-5"
SUB = Subscription("orders", GROUP, "h.h", ordering=Ordering.KEY, after_dlq=AfterDlq.HOLD)


def _dead_letter(broker: Broker, ref: QueueRef, token: int, offset: int, hold: bool) -> str:
    message = Message(ref.topic, ref.queue, offset, KEY, f"b{offset}".encode(), {}, 1.0)
    entry = dead_letter_entry(message, SUB, "RuntimeError: declined")
    result = broker.dead_letter(
        ref, GROUP, "c1", token, offset + 1, entry, park_key=KEY if hold else ""
    )
    assert result.ok
    return result.dlq_id


def test_it_replays_the_holding_dead_letter_in_place_and_republishes_an_older_one(
    redis_client: redis.Redis,
) -> None:
    create_topic(redis_client, "orders", 1)
    ref = QueueRef("orders", 0)
    broker = Broker(redis_client)
    (grant,) = broker.lock_batch([ref], GROUP, "c1", 60.0)
    older = _dead_letter(broker, ref, grant.token, 3, hold=False)  # e.g. before hold was on
    holding = _dead_letter(broker, ref, grant.token, 8, hold=True)
    redis_client.set(keys.sequence(ref), 12)  # the queue had 12 messages

    first = replay(redis_client, ref, GROUP, older)

    assert (first.outcome, first.offset) == (ReplayOutcome.REPUBLISHED, 12)
    assert holds(redis_client, ref, GROUP)[KEY]["state"] == "held"
    assert holds(redis_client, ref, GROUP)[KEY]["dlq_id"] == holding
    assert parked_messages(redis_client, ref, GROUP, KEY) == []

    second = replay(redis_client, ref, GROUP, holding, replay_id="r2")

    assert second.outcome is ReplayOutcome.IN_PLACE
    assert holds(redis_client, ref, GROUP)[KEY]["state"] == "releasing"
    (parked,) = parked_messages(redis_client, ref, GROUP, KEY)
    assert (parked.offset, parked.body) == (8, b"b8")
    assert parked.headers["lockstep-replay-of"] == holding
    assert redis_client.get(keys.sequence(ref)) == b"13"  # nothing re-published for it
