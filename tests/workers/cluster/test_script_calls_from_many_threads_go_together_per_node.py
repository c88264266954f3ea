"""``NodeCoalescedScript`` (workers/coalesce.py) on a Redis Cluster: calls that meet in
time go together, one pipeline per node, each call to the node serving its key, each
with its own reply; a call whose slot moved is followed to its new node."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import redis

from lockstep.workers.coalesce import CoalescedScript, NodeCoalescedScript
from lockstep.workers.connection import cluster_of
from tests.support import wait_until
from tests.workers.test_script_calls_from_many_threads_go_together import ECHO, _in_threads

pytestmark = [pytest.mark.slow, pytest.mark.on_cluster(only=True)]

KEYS = [f"log-{n}" for n in range(12)]  # spread over the three masters' slots


class _Counting:
    """Counts the pipelines asked of the nodes' own clients (the cluster client's own
    pipeline is another class)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = redis.Redis.pipeline

        def pipeline(client: redis.Redis, *args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return original(client, *args, **kwargs)

        monkeypatch.setattr(redis.Redis, "pipeline", pipeline)


def test_calls_to_each_node_go_together_with_their_own_replies(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = cluster_of(redis_client)
    assert cluster is not None
    masters = {cluster.get_node_from_key(key).name for key in KEYS}
    assert len(masters) == 3
    for node in cluster.get_primaries():
        cluster.get_redis_connection(node).script_load(ECHO)
    script = NodeCoalescedScript(redis_client, redis_client.register_script(ECHO))
    counting = _Counting(monkeypatch)
    # A slow call in flight on every node: the calls made meanwhile queue behind it.
    slow_keys = [next(k for k in KEYS if cluster.get_node_from_key(k).name == m) for m in masters]
    slow = [
        threading.Thread(target=script, kwargs={"keys": [key], "args": ["first", 300]})
        for key in slow_keys
    ]
    for thread in slow:
        thread.start()
    wait_until(lambda: counting.count >= 3, 5, "a slow call in flight on every node")

    replies = _in_threads(36, lambda n: script(keys=[KEYS[n % 12]], args=[f"call-{n}"]))
    for thread in slow:
        thread.join(10)

    assert replies == {n: f"call-{n}".encode() for n in range(36)}
    assert counting.count == 6  # the slow one, then all that queued, on each node
    for k, key in enumerate(KEYS):
        logged = redis_client.lrange(key, 0, -1)
        expected = {f"call-{n}".encode() for n in range(36) if n % 12 == k}
        assert set(logged) - {b"first"} == expected


def test_a_call_sent_to_a_node_that_no_longer_serves_its_slot_is_followed_there(
    redis_client: redis.Redis,
) -> None:
    cluster = cluster_of(redis_client)
    assert cluster is not None
    key = KEYS[0]
    here = cluster.get_node_from_key(key).name
    elsewhere = next(n for n in cluster.get_primaries() if n.name != here)
    # As after a slot moved: the node the calls go to answers MOVED.
    wrong = CoalescedScript(
        cluster.get_redis_connection(elsewhere), redis_client.register_script(ECHO), redis_client
    )

    assert wrong(keys=[key], args=["moved"]) == b"moved"
    assert redis_client.lrange(key, 0, -1) == [b"moved"]
