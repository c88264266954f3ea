"""``scripts.run_batch`` sends a batch of script calls as EVALSHA in one pipeline, with
no SCRIPT EXISTS before it (redis-py's own pipelines ask it at every batch, a round trip
more), and a server that lost its scripts runs each call once all the same."""

from __future__ import annotations

import redis

from lockstep.workers.scripts import run_batch

# ARGV[1] is appended to KEYS[1] and comes back.
ECHO = """
redis.call('RPUSH', KEYS[1], ARGV[1])
return ARGV[1]
"""


def _calls(client: redis.Redis, command: str) -> int:
    stats = client.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


def test_a_batch_sends_its_calls_without_asking_whether_the_script_exists(
    redis_client: redis.Redis,
) -> None:
    script = redis_client.register_script(ECHO)
    redis_client.script_load(ECHO)
    asked, sent = _calls(redis_client, "script|exists"), _calls(redis_client, "evalsha")

    replies = run_batch(redis_client, script, [(["log"], [n]) for n in ("a", "b", "c")])

    assert replies == [b"a", b"b", b"c"]
    assert _calls(redis_client, "script|exists") == asked
    assert _calls(redis_client, "evalsha") == sent + 3


def test_a_server_that_lost_its_scripts_runs_each_call_of_a_batch_once(
    redis_client: redis.Redis,
) -> None:
    script = redis_client.register_script(ECHO)
    redis_client.script_flush()

    replies = run_batch(redis_client, script, [(["log"], [n]) for n in ("a", "b", "c")])

    assert replies == [b"a", b"b", b"c"]
    assert redis_client.lrange("log", 0, -1) == [b"a", b"b", b"c"]
