"""Dead letters as ``workers.inspect`` reads them back: per (queue, group), per queue of a
group, per (topic, group) over an overview; written by the runtime's own dead-letter
script, removed by discard."""

from __future__ import annotations

import pytest
import redis

from lockstep.workers import create_topic
from lockstep.workers.broker import Broker
from lockstep.workers.dead_letters import discard
from lockstep.workers.inspect import (
    dead_letter_counts,
    dead_letters_per_group,
    dead_letters_per_queue,
    get_dead_letter,
    list_dead_letters,
    overview,
)
from lockstep.workers.refs import GroupQueue, QueueRef
from lockstep.workers.topics import register_group

pytestmark = pytest.mark.on_cluster


def _dead_letter(client: redis.Redis, ref: QueueRef, group: str, offset: int, key: str) -> str:
    """One dead letter, moved by ``dead_letter.lua`` (unfenced, as broadcasting does)."""
    entry = {
        "offset": offset,
        "key": key,
        "body": b"body",
        "headers": "{}",
        "produced_at_ms": 1_795_257_000_000 + offset,
        "reconsume_times": 3,
        "error": "RuntimeError: card declined",
    }
    result = Broker(client).dead_letter(ref, group, "c1", None, offset + 1, entry)
    assert result.ok and result.dlq_id
    return result.dlq_id


def test_it_counts_the_dead_letters_waiting_on_every_queue_of_a_group(
    redis_client: redis.Redis,
) -> None:
    create_topic(redis_client, "orders", 3)
    _dead_letter(redis_client, QueueRef("orders", 0), "mailer", 4, "a")
    _dead_letter(redis_client, QueueRef("orders", 2), "mailer", 7, "b")
    _dead_letter(redis_client, QueueRef("orders", 2), "mailer", 9, "c")
    _dead_letter(redis_client, QueueRef("orders", 2), "auditor", 9, "c")

    assert dead_letters_per_queue(redis_client, "orders", "mailer") == {0: 1, 1: 0, 2: 2}
    assert dead_letters_per_queue(redis_client, "orders", "auditor") == {0: 0, 1: 0, 2: 1}


def test_it_counts_each_queue_and_group_asked_for_in_one_answer(
    redis_client: redis.Redis,
) -> None:
    create_topic(redis_client, "orders", 2)
    _dead_letter(redis_client, QueueRef("orders", 1), "mailer", 0, "a")
    cells = [
        GroupQueue(QueueRef("orders", 1), "mailer"),
        GroupQueue(QueueRef("orders", 1), "auditor"),
    ]

    assert dead_letter_counts(redis_client, cells) == {cells[0]: 1, cells[1]: 0}


def test_it_sums_a_groups_dead_letters_over_the_topics_of_an_overview(
    redis_client: redis.Redis,
) -> None:
    for topic in ("orders", "payments"):
        create_topic(redis_client, topic, 2)
        register_group(redis_client, topic, "mailer")
    register_group(redis_client, "orders", "auditor")
    _dead_letter(redis_client, QueueRef("orders", 0), "mailer", 1, "a")
    _dead_letter(redis_client, QueueRef("orders", 1), "mailer", 2, "b")
    _dead_letter(redis_client, QueueRef("payments", 1), "mailer", 3, "c")

    counts = dead_letters_per_group(redis_client, overview(redis_client))

    assert counts == {
        ("orders", "auditor"): 0,
        ("orders", "mailer"): 2,
        ("payments", "mailer"): 1,
    }


def test_it_stops_counting_a_dead_letter_once_it_is_discarded(redis_client: redis.Redis) -> None:
    create_topic(redis_client, "orders", 1)
    dlq_id = _dead_letter(redis_client, QueueRef("orders", 0), "mailer", 5, "a")

    assert discard(redis_client, QueueRef("orders", 0), "mailer", dlq_id)

    assert dead_letters_per_queue(redis_client, "orders", "mailer") == {0: 0}
    assert get_dead_letter(redis_client, QueueRef("orders", 0), "mailer", dlq_id) is None


def test_it_reads_a_dead_letter_back_as_the_runtime_wrote_it(redis_client: redis.Redis) -> None:
    create_topic(redis_client, "orders", 2)
    ref = QueueRef("orders", 1)
    dlq_id = _dead_letter(redis_client, ref, "mailer", 8, "order-8")
    _dead_letter(redis_client, ref, "mailer", 9, "order-9")

    letter = get_dead_letter(redis_client, ref, "mailer", dlq_id)
    (by_key,) = list_dead_letters(redis_client, "orders", "mailer", key="order-8")

    assert letter == by_key
    assert letter is not None
    assert (letter.ref, letter.group, letter.offset, letter.key) == (ref, "mailer", 8, "order-8")
    assert (letter.body, letter.reconsume_times) == (b"body", 3)
    assert letter.produced_at_ms == 1_795_257_000_008
    assert letter.error == "RuntimeError: card declined"
    assert letter.dead_at_ms > 0
    assert letter.as_message().reconsume_times == 0
