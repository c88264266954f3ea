"""With ``LOCKSTEP_EVENT_SHARDS=4`` the event log is four streams, ``ls:events:{s0}`` …
``ls:events:{s3}``: the events of many queues spread over several of them, every event of
one queue is in the one stream ``crc32("<topic>:<queue>") % 4`` names, in the order it was
emitted; an event without a queue goes by its topic, or by its consumer; every shard
written is registered in ``ls:events:streams``; nothing goes to the legacy ``ls:events``.
The same holds on a Redis Cluster, which refuses any cross-slot command a writer sent."""

from __future__ import annotations

import zlib
from collections import defaultdict
from typing import cast

import pytest
import redis

from lockstep.workers import events as ev
from lockstep.workers import keys
from lockstep.workers.events import EventLog, decode_event, read_all_events, shard_streams
from lockstep.workers.redis_types import entries

TOPICS = ("orders", "payments", "mail")
QUEUES = 8
PER_QUEUE = 25


@pytest.fixture
def client(redis_on_either: redis.Redis) -> redis.Redis:
    return redis_on_either


def _shard(basis: str) -> str:
    return keys.event_shard(zlib.crc32(basis.encode()) % 4)


def test_each_queue_s_events_are_in_one_shard_in_the_order_emitted(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCKSTEP_EVENT_SHARDS", "4")
    log = EventLog(client, flush_interval=0.01, max_buffer=40)  # many small flushes
    log.start()
    log.emit(ev.CONSUMER_STARTED, consumer="host@1@abcdef")
    for n in range(PER_QUEUE):
        for topic in TOPICS:
            for q in range(QUEUES):
                log.emit(ev.CONSUME_FAILED, topic=topic, group="g", queue=q, details={"n": n})
    log.emit(ev.REBALANCE, topic="payments", group="g")
    log.stop()

    homes: dict[tuple[str, int], set[str]] = defaultdict(set)
    order: dict[tuple[str, int], list[int]] = defaultdict(list)
    queueless: dict[str, str] = {}
    for stream in shard_streams(4):
        for entry_id, raw in entries(client.xrange(stream)):
            event = decode_event(entry_id, raw)
            if event["queue"] is None:
                queueless[event["type"]] = stream
                continue
            homes[(event["topic"], event["queue"])].add(stream)
            order[(event["topic"], event["queue"])].append(event["details"]["n"])

    assert len(homes) == len(TOPICS) * QUEUES
    assert {k: sorted(v) for k, v in homes.items()} == {
        (t, q): [_shard(f"{t}:{q}")] for t in TOPICS for q in range(QUEUES)
    }
    used = set().union(*homes.values())
    assert len(used) > 1, "the queues are spread over several shards"
    assert all(seq == list(range(PER_QUEUE)) for seq in order.values()), order
    assert queueless == {
        ev.CONSUMER_STARTED: _shard("host@1@abcdef"),
        ev.REBALANCE: _shard("payments"),
    }
    assert client.exists(keys.EVENTS) == 0, "nothing in the legacy stream"
    registered = {m.decode() for m in cast(set[bytes], client.smembers(keys.EVENT_STREAMS))}
    assert registered == used | set(queueless.values())

    everything = read_all_events(client)
    assert len(everything) == len(TOPICS) * QUEUES * PER_QUEUE + 2
    assert len({e["id"] for e in everything}) == len(everything), "stored IDs are unique"
    merged = [e["details"]["n"] for e in everything if (e["topic"], e["queue"]) == ("mail", 3)]
    assert merged == list(range(PER_QUEUE))
