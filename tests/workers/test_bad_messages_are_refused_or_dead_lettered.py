"""Bad input is refused by ``send`` with an ``InvalidMessageError`` that says why, or, once
in a stream, is handled or dead-lettered with the reason by a running consumer that never
crashes and moves past it.

Send side, property-based: any key, body and headers (empty and over-long keys, lone
surrogates, NUL bytes, bodies around LOCKSTEP_MAX_BODY_BYTES) are either stored so that
they read back unchanged or refused, as the documented limits decide; nothing else is
raised, and a refused message stores nothing.
Stream side: entries another writer put into a queue stream with XADD (missing fields,
binary garbage, JSON too deep to parse, IDs a producer never writes)."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockstep.workers import InvalidMessageError, Producer, create_topic, keys
from lockstep.workers.config import Limits
from lockstep.workers.errors import SendError
from lockstep.workers.hashing import queue_for_key
from lockstep.workers.message import decode_entry
from lockstep.workers.refs import QueueRef
from tests.support import wait_until
from tests.workers.conftest import StartConsumer
from tests.workers.harness import events, fully_committed, handled, stream_entries

TOPIC, GROUP = "orders", "shipping"
MAX_KEY, MAX_BODY = 16, 64

# Text of every kind: lone surrogates, NUL and other controls, multi-byte characters.
_chars = st.one_of(
    st.sampled_from(["\x00", "\ud800", "\udfff", "é", "😀", "k"]),
    st.characters(exclude_categories=()),
)
_text = st.text(_chars, max_size=MAX_KEY + 4)
_keys = st.one_of(_text, st.text(st.just("é"), min_size=MAX_KEY // 2, max_size=MAX_KEY // 2 + 1))
_bodies = st.one_of(
    st.binary(max_size=MAX_BODY + 8),
    st.binary(min_size=MAX_BODY, max_size=MAX_BODY + 1),
    st.binary(max_size=MAX_BODY).map(bytearray),
)
_header_values = st.one_of(_text, st.integers(), st.none(), st.floats(allow_nan=False))
_headers = st.one_of(
    st.none(),
    st.dictionaries(st.one_of(_text, st.integers()), _header_values, max_size=3),
)


def _utf8_size(text: str) -> int | None:
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def _acceptable(key: str, body: bytes | bytearray, headers: dict[Any, Any] | None) -> bool:
    """The documented rules (docs/api.md §3, "Refused before sending"), for the limits above."""
    key_size = _utf8_size(key)
    if not key or key_size is None or key_size > MAX_KEY or len(body) > MAX_BODY:
        return False
    if headers is None:
        return True
    if not all(isinstance(name, str) for name in headers):
        return False
    size = _utf8_size(json.dumps(headers, separators=(",", ":"), ensure_ascii=False))
    return size is not None and size <= MAX_BODY


def _stored(client: redis.Redis, queues: int) -> int:
    return sum(int(client.xlen(keys.stream(QueueRef(TOPIC, q)))) for q in range(queues))


def _read_back(client: redis.Redis, queue: int, offset: int) -> tuple[str, bytes, dict[str, Any]]:
    ref = QueueRef(TOPIC, queue)
    [(entry_id, fields)] = cast(
        list[tuple[bytes, dict[bytes, bytes]]],
        client.xrange(keys.stream(ref), f"{offset}-1", f"{offset}-1"),
    )
    message = decode_entry(ref, entry_id, fields)
    return message.key, message.body, message.headers


@settings(
    max_examples=150,
    deadline=None,
    # One Redis and one producer for all examples; each example checks its own effect.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(key=_keys, body=_bodies, headers=_headers)
def test_it_stores_or_refuses_any_key_body_and_headers_as_the_limits_say(
    redis_client: redis.Redis,
    redis_url: str,
    key: str,
    body: bytes | bytearray,
    headers: dict[Any, Any] | None,
) -> None:
    create_topic(redis_client, TOPIC, 2)
    producer = Producer(redis_url, limits=Limits(max_body_bytes=MAX_BODY, max_key_bytes=MAX_KEY))
    before = _stored(redis_client, 2)
    try:
        if _acceptable(key, body, headers):
            sent = producer.send(TOPIC, key, body, headers)
            assert _read_back(redis_client, sent.queue, sent.offset) == (
                key,
                bytes(body),
                json.loads(json.dumps(headers or {}, default=str)),
            )
            assert sent.queue == queue_for_key(key, 2)
            assert _stored(redis_client, 2) == before + 1
        else:
            with pytest.raises(InvalidMessageError):
                producer.send(TOPIC, key, body, headers)
            assert _stored(redis_client, 2) == before
    finally:
        producer.close()


def test_it_takes_a_key_and_a_body_at_their_limits_and_refuses_one_byte_more(
    redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    create_topic(redis_client, TOPIC, 1)
    monkeypatch.setenv("LOCKSTEP_MAX_KEY_BYTES", "32")
    monkeypatch.setenv("LOCKSTEP_MAX_BODY_BYTES", "100")
    producer = Producer(redis_url)
    try:
        at_limits = producer.send(TOPIC, "é" * 16, b"\x00" * 100)  # 32 bytes of UTF-8
        with pytest.raises(InvalidMessageError) as long_key:
            producer.send(TOPIC, "é" * 16 + "k", b"paid")
        with pytest.raises(InvalidMessageError) as long_body:
            producer.send(TOPIC, "order-1", b"\x00" * 101)
    finally:
        producer.close()

    assert at_limits.offset == 0
    assert str(long_key.value) == (
        "key is 33 bytes in UTF-8, over the limit of 32 (LOCKSTEP_MAX_KEY_BYTES)"
    )
    assert str(long_body.value) == (
        "body is 101 bytes, over the limit of 100 (LOCKSTEP_MAX_BODY_BYTES)"
    )
    assert Limits().max_key_bytes == 1024
    assert _stored(redis_client, 1) == 1


def test_it_refuses_text_that_is_not_valid_unicode_with_a_reason(
    redis_client: redis.Redis, producer: Producer
) -> None:
    create_topic(redis_client, TOPIC, 1)
    refusals = []
    cases: list[tuple[str, str, dict[Any, Any] | None]] = [
        (TOPIC, "order-\ud800", None),
        (TOPIC, "order-1", {"source": "checkout-\udcff"}),
        (TOPIC, "order-1", {"\ud800": "checkout"}),
        (TOPIC, "order-1", {("a", "b"): "checkout"}),
        ("orders-\ud800", "order-1", None),
    ]
    for topic, key, headers in cases:
        with pytest.raises(InvalidMessageError) as refused:
            producer.send(topic, key, b"paid", headers)
        refusals.append(str(refused.value))

    assert refusals == [
        "key is not valid Unicode text: surrogates not allowed at index 6",
        "headers is not valid Unicode text: surrogates not allowed at index 20",
        "headers is not valid Unicode text: surrogates not allowed at index 2",
        "header names must be strings, got ('a', 'b')",
        "topic name 'orders-\\ud800' is invalid: use 1-128 letters, digits, '_', '-', '.', '%'",
    ]
    assert _stored(redis_client, 1) == 0


# -- stream side ---------------------------------------------------------------------------
def _next_offset(client: redis.Redis) -> int:
    return int(client.get(keys.sequence(QueueRef(TOPIC, 0))) or 0)


def _write_by_hand(client: redis.Redis, fields: dict[bytes, bytes]) -> int:
    """An entry at the next offset, with a producer's ID but the given fields."""
    offset = int(client.incr(keys.sequence(QueueRef(TOPIC, 0)))) - 1
    client.xadd(keys.stream(QueueRef(TOPIC, 0)), fields, id=f"{offset}-1")  # type: ignore[arg-type]
    return offset


def _write_with_id(client: redis.Redis, entry_id: str) -> int:
    """A well-formed entry under an ID no producer writes; returns its offset part."""
    fields = {b"k": b"intruder", b"b": b"{}", b"h": b"{}", b"t": b"1"}
    written = client.xadd(keys.stream(QueueRef(TOPIC, 0)), fields, id=entry_id)  # type: ignore[arg-type]
    return int(cast(bytes, written).split(b"-")[0])


def _fill_with_bad_entries(
    client: redis.Redis, producer: Producer
) -> tuple[list[int], list[tuple[int, str]]]:
    """Good messages with odd contents between bad entries; returns the good offsets and
    the (offset, reason) each bad entry must be dead-lettered with, in stream order."""
    good: list[int] = []
    bad: list[tuple[int, str]] = []
    good.append(producer.send(TOPIC, "a\x00b", b"\x00\xff", {"note": "\x00"}).offset)
    good.append(producer.send(TOPIC, "é" * 512, b"").offset)  # a key at the 1024-byte limit
    bad.append((_write_with_id(client, f"{_next_offset(client)}-0"), "is not <offset>-1"))
    good.append(producer.send(TOPIC, "after-the-shadow", b"{}").offset)  # the same offset
    bad.append((_write_with_id(client, f"{good[-1]}-7"), "is not <offset>-1"))
    for fields, reason in [
        ({b"b": b"x", b"t": b"1"}, "missing field b'k'"),
        ({b"k": b"order-1", b"b": b"x"}, "missing field b't'"),
        ({b"\x00\xff": b"\xfe\x00"}, "missing field b'k'"),
        ({b"k": b"\xff\xfe", b"b": b"x", b"t": b"1"}, "undecodable entry: UnicodeDecodeError"),
        ({b"k": b"o", b"b": b"x", b"h": b"\xff", b"t": b"1"}, "UnicodeDecodeError"),
        ({b"k": b"o", b"b": b"x", b"h": b"[" * 100_000, b"t": b"1"}, "RecursionError"),
        ({b"k": b"o", b"b": b"x", b"t": b"9" * 400}, "undecodable entry: OverflowError"),
        ({b"k": b"o", b"b": b"x", b"t": b"soon"}, "undecodable entry: ValueError"),
        ({b"k": b"o", b"b": b"x", b"h": b"null", b"t": b"1"}, "headers are not a JSON object"),
    ]:
        bad.append((_write_by_hand(client, fields), reason))
    good.append(producer.send(TOPIC, "order-1", b"\x00" * 1000, {"\x00": None}).offset)
    beyond = f"{_next_offset(client) + 1000}-1"
    bad.append((_write_with_id(client, beyond), "is beyond the queue's sequence"))
    bad.append((_write_with_id(client, "*"), "is not <offset>-1"))
    return good, bad


@pytest.mark.parametrize("ordering", ["queue", "key"])
def test_it_handles_or_dead_letters_every_entry_written_into_a_stream_and_keeps_going(
    redis_client: redis.Redis, producer: Producer, start_consumer: StartConsumer, ordering: str
) -> None:
    create_topic(redis_client, TOPIC, 1)
    good, bad = _fill_with_bad_entries(redis_client, producer)
    with pytest.raises(SendError) as blocked:  # the stream's top ID is now beyond any offset
        producer.send(TOPIC, "order-2", b"paid")
    dlq_key = keys.dead_letters(QueueRef(TOPIC, 0), GROUP)

    start_consumer(TOPIC, GROUP, f"bad-input-{ordering}", ordering=ordering)
    wait_until(
        lambda: (
            fully_committed(redis_client, TOPIC, GROUP, 1)
            and redis_client.xlen(dlq_key) >= len(bad)
            and len(handled(redis_client)) >= len(good)
        ),
        15,
        "the queue to move past every entry",
    )

    assert blocked.value.maybe_stored is False
    assert sorted(r["o"] for r in handled(redis_client)) == good
    dead = [fields for _, fields in stream_entries(redis_client, dlq_key)]
    assert len(dead) == len(bad)
    for fields, (offset, reason) in zip(dead, bad, strict=True):
        assert int(fields[b"offset"]) == offset
        assert fields[b"error"].startswith(b"malformed entry: ")
        assert reason.encode() in fields[b"error"]
    assert events(redis_client, "handler_error") == []
    wait_until(
        lambda: len(events(redis_client, "malformed_entry")) >= len(bad),
        5,
        "a malformed_entry event for each bad entry",
    )
    reported = [e["details"]["offset"] for e in events(redis_client, "malformed_entry")]
    assert sorted(reported) == sorted(offset for offset, _ in bad)
