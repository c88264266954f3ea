"""``CoalescedScript`` (workers/coalesce.py): calls of one script that meet in time are
sent as one pipeline, each with its own reply or error, and a server that lost its
scripts loads them again."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
import redis

from lockstep.workers.coalesce import CoalescedScript
from tests.support import wait_until

# ARGV[1] comes back, after ARGV[2] milliseconds of busy work; "bad" is an error reply.
ECHO = """
local stop = tonumber(ARGV[2] or '0')
local t = redis.call('TIME')
local start = t[1] * 1000 + t[2] / 1000
while stop > 0 do
  t = redis.call('TIME')
  if t[1] * 1000 + t[2] / 1000 - start >= stop then break end
end
if ARGV[1] == 'bad' then return redis.error_reply('bad call') end
redis.call('RPUSH', KEYS[1], ARGV[1])
return ARGV[1]
"""


class CountingClient(redis.Redis):
    """The suite's client, counting the pipelines it was asked for (round trips)."""

    pipelines = 0

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Any:
        type(self).pipelines += 1
        return super().pipeline(transaction, shard_hint)


@pytest.fixture
def counting(redis_client: redis.Redis) -> CountingClient:
    redis_client.script_load(ECHO)  # a first call's NOSCRIPT would add a round trip
    CountingClient.pipelines = 0
    return CountingClient(connection_pool=redis_client.connection_pool)


def _in_threads(count: int, call: Callable[[int], Any]) -> dict[int, Any]:
    out: dict[int, Any] = {}

    def run(n: int) -> None:
        try:
            out[n] = call(n)
        except redis.RedisError as exc:
            out[n] = exc

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return out


def test_calls_made_while_one_is_in_flight_go_in_one_pipeline_with_their_own_replies(
    counting: CountingClient,
) -> None:
    script = CoalescedScript(counting, counting.register_script(ECHO))
    slow = threading.Thread(target=script, kwargs={"keys": ["log"], "args": ["first", 300]})
    slow.start()
    wait_until(lambda: CountingClient.pipelines > 0, 5, "the first call in flight (300 ms)")

    replies = _in_threads(20, lambda n: script(keys=["log"], args=[f"call-{n}"]))
    slow.join(10)

    assert replies == {n: f"call-{n}".encode() for n in range(20)}
    assert CountingClient.pipelines == 2
    logged = counting.lrange("log", 0, -1)
    assert logged[0] == b"first"
    assert sorted(logged[1:]) == sorted(f"call-{n}".encode() for n in range(20))


def test_an_error_reply_is_raised_to_its_own_caller_only(counting: CountingClient) -> None:
    script = CoalescedScript(counting, counting.register_script(ECHO))
    slow = threading.Thread(target=script, kwargs={"keys": ["log"], "args": ["first", 300]})
    slow.start()
    wait_until(lambda: CountingClient.pipelines > 0, 5, "the first call in flight (300 ms)")

    replies = _in_threads(6, lambda n: script(keys=["log"], args=["bad" if n == 3 else str(n)]))
    slow.join(10)

    assert isinstance(replies.pop(3), redis.ResponseError)
    assert replies == {n: str(n).encode() for n in (0, 1, 2, 4, 5)}
    assert sorted(counting.lrange("log", 1, -1)) == [b"0", b"1", b"2", b"4", b"5"]


def test_a_server_that_lost_its_scripts_gets_them_again(counting: CountingClient) -> None:
    script = CoalescedScript(counting, counting.register_script(ECHO))
    assert script(keys=["log"], args=["before"]) == b"before"
    assert CountingClient.pipelines == 1
    counting.script_flush()

    assert script(keys=["log"], args=["after"]) == b"after"
    assert CountingClient.pipelines == 3  # refused, then sent again after the load
    assert counting.lrange("log", 0, -1) == [b"before", b"after"]


def test_an_unreachable_redis_is_the_error_of_every_waiting_call(dead_redis_url: str) -> None:
    client = redis.Redis.from_url(dead_redis_url, socket_connect_timeout=0.5)
    script = CoalescedScript(client, client.register_script(ECHO))

    replies = _in_threads(5, lambda n: script(keys=["log"], args=[str(n)]))

    assert sorted(replies) == list(range(5))
    assert all(isinstance(r, redis.ConnectionError) for r in replies.values())
