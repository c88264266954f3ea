"""A model-based test of the broker's lock, unlock, commit and dead-letter scripts against a
real Redis: whatever the interleaving of consumers, only the current owner with the current
token moves the offset, and every new grant carries a larger token than any before it."""

from __future__ import annotations

from dataclasses import dataclass, field

import redis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from lockstep.workers import keys
from lockstep.workers.broker import Broker, CommitOutcome
from lockstep.workers.refs import QueueRef

TOPIC, GROUP, QUEUE = "model", "g", 0
CONSUMERS = st.sampled_from(["c1", "c2", "c3"])
LONG_TTL_S = 600.0  # expiry is driven explicitly by the `expire` rule, never by the clock


@dataclass
class LockModel:
    owner: str | None = None
    token: int = 0
    expired: bool = False
    committed: int = 0
    dead_letters: int = 0
    granted: list[int] = field(default_factory=list)

    def live_owner(self) -> str | None:
        return None if self.expired else self.owner

    def outcome_for(self, consumer: str, token: int) -> CommitOutcome:
        if self.owner != consumer or self.token != token:
            return CommitOutcome.FENCED
        return CommitOutcome.EXPIRED if self.expired else CommitOutcome.OK


class BrokerLocks(RuleBasedStateMachine):
    redis_url = ""

    def __init__(self) -> None:
        super().__init__()
        self.client = redis.Redis.from_url(self.redis_url)
        self.client.delete(
            keys.lock(QueueRef(TOPIC, QUEUE), GROUP),
            keys.offset(QueueRef(TOPIC, QUEUE), GROUP),
            keys.dead_letters(QueueRef(TOPIC, QUEUE), GROUP),
        )
        self.broker = Broker(self.client)
        self.model = LockModel()
        self.seen: dict[str, list[int]] = {}  # tokens each consumer was ever granted

    def teardown(self) -> None:
        self.client.close()

    def _token_of(self, consumer: str, pick: int) -> int:
        tokens = self.seen.get(consumer) or [0]
        return tokens[pick % len(tokens)]

    @rule(consumer=CONSUMERS)
    def lock(self, consumer: str) -> None:
        (grant,) = self.broker.lock_batch([QueueRef(TOPIC, QUEUE)], GROUP, consumer, LONG_TTL_S)
        m = self.model
        live = m.live_owner()
        if live == consumer:
            assert (grant.token, grant.new) == (m.token, False), "a renewal keeps the token"
        elif live is not None:
            assert grant.token == 0, f"{consumer} was granted a queue {live} holds"
        else:
            assert grant.new
            assert grant.token > max(m.granted, default=0), "tokens must strictly increase"
            m.owner, m.token, m.expired = consumer, grant.token, False
            m.granted.append(grant.token)
            self.seen.setdefault(consumer, []).append(grant.token)

    @rule(consumer=CONSUMERS)
    def renew_only(self, consumer: str) -> None:
        (grant,) = self.broker.lock_batch(
            [QueueRef(TOPIC, QUEUE)], GROUP, consumer, LONG_TTL_S, renew_only=True
        )
        m = self.model
        if m.live_owner() == consumer:
            assert (grant.token, grant.new) == (m.token, False)
        else:
            assert grant.token == 0, "a renewal must never grant a lock afresh"

    @rule(consumer=CONSUMERS, pick=st.integers(0, 8))
    def unlock(self, consumer: str, pick: int) -> None:
        token = self._token_of(consumer, pick)
        released = self.broker.unlock(QueueRef(TOPIC, QUEUE), GROUP, consumer, token)
        m = self.model
        assert released == (m.owner == consumer and m.token == token)
        if released:
            m.owner, m.expired = None, True

    @rule()
    def expire(self) -> None:
        """Time passes beyond the lock's ttl (without waiting for it)."""
        if self.client.exists(keys.lock(QueueRef(TOPIC, QUEUE), GROUP)):
            self.client.hset(keys.lock(QueueRef(TOPIC, QUEUE), GROUP), "expires_at", 1)
            self.model.expired = True

    @rule(consumer=CONSUMERS, pick=st.integers(0, 8), offset=st.integers(0, 10**6))
    def commit(self, consumer: str, pick: int, offset: int) -> None:
        token = self._token_of(consumer, pick)
        result = self.broker.commit(QueueRef(TOPIC, QUEUE), GROUP, consumer, token, offset)
        expected = self.model.outcome_for(consumer, token)
        assert result.outcome is expected, (consumer, token, self.model)
        if expected is CommitOutcome.OK:
            self.model.committed = offset

    @rule(consumer=CONSUMERS, pick=st.integers(0, 8), offset=st.integers(0, 10**6))
    def dead_letter(self, consumer: str, pick: int, offset: int) -> None:
        token = self._token_of(consumer, pick)
        result = self.broker.dead_letter(
            QueueRef(TOPIC, QUEUE),
            GROUP,
            consumer,
            token,
            offset,
            {"offset": offset - 1, "error": "poison"},
        )
        expected = self.model.outcome_for(consumer, token)
        assert result.outcome is expected, (consumer, token, self.model)
        if expected is CommitOutcome.OK:
            assert result.dlq_id
            self.model.committed = offset
            self.model.dead_letters += 1

    @invariant()
    def offset_moved_only_by_accepted_commits(self) -> None:
        assert (
            self.broker.read_offset(QueueRef(TOPIC, QUEUE), GROUP).committed == self.model.committed
        )
        dlq = self.client.xlen(keys.dead_letters(QueueRef(TOPIC, QUEUE), GROUP))
        assert dlq == self.model.dead_letters


def test_it_lets_only_the_current_owner_with_the_current_token_commit(redis_url: str) -> None:
    BrokerLocks.redis_url = redis_url
    run_state_machine_as_test(
        BrokerLocks,
        settings=settings(
            max_examples=100,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
