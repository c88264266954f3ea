"""Creating a topic takes steps that touch two keys (on a cluster, in two slots): its
hash, marked 'creating', then the list of topics, then the mark 'ready'. A creation cut
short after any step leaves a topic nobody can use, and running it again finishes it."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from lockstep.workers import Producer
from lockstep.workers.errors import ConfigurationError, UnknownTopicError
from lockstep.workers.topics import create_topic, get_topic, list_topics

pytestmark = pytest.mark.on_cluster


def _cut_after(client: redis.Redis, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """The connection dies when the creation reaches ``command`` (nothing of it runs)."""

    def dead(*args: Any, **kwargs: Any) -> Any:
        raise redis.ConnectionError("connection lost (injected)")

    monkeypatch.setattr(client, command, dead)


@pytest.mark.parametrize("cut_at", ["sadd", "hset"])
def test_a_half_created_topic_is_refused_to_producers_and_finished_by_a_rerun(
    redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch, cut_at: str
) -> None:
    with monkeypatch.context() as patch:
        _cut_after(redis_client, patch, cut_at)
        with pytest.raises(redis.ConnectionError):
            create_topic(redis_client, "payments", 4)

    with pytest.raises(UnknownTopicError, match=r"create_topic\(redis_url, 'payments', 4\)"):
        get_topic(redis_client, "payments")
    assert [t.name for t in list_topics(redis_client)] == []
    producer = Producer(redis_url)
    try:
        with pytest.raises(UnknownTopicError):
            producer.send("payments", "acct-1", b"{}")
        # A different queue count is still refused: the first attempt fixed it.
        with pytest.raises(ConfigurationError, match="exists with 4 queues"):
            create_topic(redis_client, "payments", 8)

        topic = create_topic(redis_client, "payments", 4)

        assert (topic.name, topic.queues) == ("payments", 4)
        assert [t.name for t in list_topics(redis_client)] == ["payments"]
        sent = producer.send("payments", "acct-1", b"{}")
        assert sent.offset == 0
    finally:
        producer.close()


def test_running_the_creation_again_on_a_finished_topic_changes_nothing(
    redis_client: redis.Redis,
) -> None:
    first = create_topic(redis_client, "ledger", 3)

    again = create_topic(redis_client, "ledger", 3)

    assert again == first
    assert [t.name for t in list_topics(redis_client)] == ["ledger"]


def test_a_topic_stored_before_creation_had_steps_is_ready(redis_client: redis.Redis) -> None:
    redis_client.hset("ls:topic:legacy", mapping={"queues": 2, "created_at": 5})
    redis_client.sadd("ls:topics", "legacy")

    assert get_topic(redis_client, "legacy").queues == 2
    assert create_topic(redis_client, "legacy", 2).created_at_ms == 5
