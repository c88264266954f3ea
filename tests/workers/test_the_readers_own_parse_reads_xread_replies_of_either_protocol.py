"""The pool's reader parses its ``XREAD`` replies itself (``redis_types.raw_xread``,
docs/reading.md "The runners"): a map of streams under RESP3, a list of pairs under
RESP2; either gives each stream's entries as redis-py's own parse would."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from lockstep.workers.redis_types import raw_reply, raw_xread

STREAMS: dict[Any, Any] = {"raw-xread:a": "0-0", "raw-xread:b": "0-0", "raw-xread:empty": "0-0"}


@pytest.fixture
def filled(redis_client: redis.Redis) -> Iterator[None]:
    redis_client.xadd("raw-xread:a", {"k": "one", "b": b"\x00\xff"}, id="1-1")
    redis_client.xadd("raw-xread:a", {"k": "two", "b": b""}, id="2-1")
    redis_client.xadd("raw-xread:b", {"k": "three", "b": b"x"}, id="7-1")
    redis_client.xadd("raw-xread:empty", {"k": "gone"}, id="1-1")
    redis_client.xdel("raw-xread:empty", "1-1")
    yield
    redis_client.delete(*STREAMS)


@pytest.mark.parametrize("protocol", [2, 3])
def test_each_stream_gets_its_entries_as_redis_py_parses_them(
    filled: None, redis_url: str, protocol: int
) -> None:
    raw = redis.Redis.from_url(redis_url, protocol=protocol)
    parsed = redis.Redis.from_url(redis_url, protocol=protocol)
    raw.set_response_callback("XREAD", raw_reply)
    try:
        mine = raw_xread(raw.xread(STREAMS, count=10))
        theirs = parsed.xread(STREAMS, count=10)
    finally:
        raw.close()
        parsed.close()

    expected = {stream: list(found) for stream, found in _pairs(theirs)}
    assert mine == expected
    assert [entry_id for entry_id, _ in mine[b"raw-xread:a"]] == [b"1-1", b"2-1"]
    assert mine[b"raw-xread:a"][0][1] == {b"k": b"one", b"b": b"\x00\xff"}


def test_a_read_that_found_nothing_gives_no_streams() -> None:
    assert raw_xread(None) == {}
    assert raw_xread([]) == {}
    assert raw_xread({}) == {}


def _pairs(reply: Any) -> list[tuple[bytes, list[Any]]]:
    """redis-py's parsed XREAD reply: a list of [stream, entries] under RESP2; under RESP3
    a map of stream to a list holding the entries."""
    if isinstance(reply, dict):
        return [(stream, found[0]) for stream, found in reply.items()]
    return [(stream, found) for stream, found in reply]
