"""The heartbeat script returns a group's member list only when it changed since the
caller last read it: otherwise ``{now, digest}``, the same size for 3 members or 300, so
membership polls no longer cost Redis output that grows with consumers^2. The broker
keeps the list it read, and still sees every change: a join, a leave, a member that went
silent and expired without writing anything."""

from __future__ import annotations

import pytest
import redis

from lockstep.workers import keys
from lockstep.workers.broker import Broker
from lockstep.workers.scripts import script

pytestmark = pytest.mark.on_cluster

TOPIC, GROUP = "orders", "billing"
TIMEOUT_S = 30.0


def _join(client: redis.Redis, members: list[str], group: str = GROUP) -> None:
    for member in members:
        Broker(client).heartbeat(TOPIC, group, member, TIMEOUT_S)


def _raw_poll(client: redis.Redis, group: str, digest: str) -> list[bytes]:
    heartbeat = script(client, "heartbeat")
    reply: list[bytes] = heartbeat(
        keys=[keys.registry(TOPIC, group)], args=["", int(TIMEOUT_S * 1000), digest]
    )
    return reply


def test_a_quiet_poll_replies_two_fields_whatever_the_group_size(
    redis_client: redis.Redis,
) -> None:
    _join(redis_client, [f"c{n}" for n in range(3)], "small")
    _join(redis_client, [f"consumer-{n:03d}.host.example:{1000 + n}" for n in range(300)], "big")

    sizes = {}
    for group in ("small", "big"):
        first = _raw_poll(redis_client, group, "")
        quiet = _raw_poll(redis_client, group, first[1].decode())
        sizes[group] = (len(first), len(quiet), len(quiet[1]))

    assert sizes == {"small": (5, 2, 40), "big": (302, 2, 40)}


def test_the_broker_sees_joins_leaves_and_expiries_between_quiet_polls(
    redis_client: redis.Redis,
) -> None:
    _join(redis_client, ["a", "b"])
    reader = Broker(redis_client)

    seen = [reader.heartbeat(TOPIC, GROUP, "", TIMEOUT_S)]
    seen.append(reader.heartbeat(TOPIC, GROUP, "", TIMEOUT_S))  # nothing changed
    _join(redis_client, ["c"])
    seen.append(reader.heartbeat(TOPIC, GROUP, "", TIMEOUT_S))
    Broker(redis_client).leave(TOPIC, GROUP, "a")
    seen.append(reader.heartbeat(TOPIC, GROUP, "", TIMEOUT_S))
    # "b" falls silent: its last beat is older than the timeout, and nobody writes.
    redis_client.zadd(keys.registry(TOPIC, GROUP), {"b": 1})
    seen.append(reader.heartbeat(TOPIC, GROUP, "", TIMEOUT_S))

    assert seen == [["a", "b"], ["a", "b"], ["a", "b", "c"], ["b", "c"], ["c"]]
