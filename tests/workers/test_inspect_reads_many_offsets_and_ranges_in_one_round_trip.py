"""``keys_at`` (the sampler's head keys) and ``stream_ranges`` (the analytics writer's
reads): many queues' entries in one pipelined round trip, on Redis and on a cluster."""

from __future__ import annotations

import pytest
import redis

from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.inspect import StreamRange, keys_at, stream_ranges
from lockstep.workers.message import decode_entry
from lockstep.workers.refs import QueueRef

pytestmark = pytest.mark.on_cluster


def _fill(client: redis.Redis, producer: Producer) -> dict[int, list[str]]:
    """Queue -> the keys sent to it, in offset order (three queues, 40 messages)."""
    create_topic(client, "orders", 3)
    sent: dict[int, list[str]] = {0: [], 1: [], 2: []}
    for n in range(40):
        result = producer.send("orders", f"order-{n}", b"x")
        assert result.offset == len(sent[result.queue])
        sent[result.queue].append(f"order-{n}")
    return sent


def test_keys_at_answers_the_key_sent_at_each_offset_or_empty(
    redis_client: redis.Redis, producer: Producer
) -> None:
    sent = _fill(redis_client, producer)
    q0, q1, q2 = (QueueRef("orders", q) for q in range(3))
    redis_client.xdel(keys.stream(q1), "2-1")  # trimmed
    wanted = [(q0, 0), (q0, 4), (q1, 2), (q1, 3), (q2, 1), (q0, 99)]

    found = keys_at(redis_client, wanted)

    assert [found[at] for at in wanted] == [sent[0][0], sent[0][4], "", sent[1][3], sent[2][1], ""]


def test_stream_ranges_read_from_start_up_to_end_excluded_at_most_count(
    redis_client: redis.Redis, producer: Producer
) -> None:
    sent = _fill(redis_client, producer)
    q0, q1 = QueueRef("orders", 0), QueueRef("orders", 1)
    ranges = [StreamRange(q0, 1, 4), StreamRange(q1, 2), StreamRange(q1, 0, count=2)]

    replies = stream_ranges(redis_client, ranges)

    offsets = [
        [decode_entry(r.ref, entry_id, fields).offset for entry_id, fields in reply]
        for r, reply in zip(ranges, replies, strict=True)
    ]
    assert offsets == [[1, 2, 3], list(range(2, len(sent[1]))), [0, 1]]


def test_no_range_asked_costs_no_round_trip(redis_client: redis.Redis) -> None:
    assert stream_ranges(redis_client, []) == []
    assert keys_at(redis_client, []) == {}
