"""Ingesters with leases (``ingest_leases``) split the event streams evenly, each reading
only its own; exactly one of them pushes live updates. One that falls silent (killed)
keeps its streams until its leases expire, then the others take them over and resume
from the stored cursors; one that stops cleanly hands over at once. More ingesters than
streams: the extra ones stand by."""

from __future__ import annotations

import logging

import pytest
import redis

from lockstep.dashboard.monitor.ingest import Ingester
from lockstep.dashboard.monitor.ingest_leases import StreamLeases, assign
from lockstep.dashboard.web.store.models import Event
from lockstep.workers import events as ev
from lockstep.workers.events import read_all_events, shard_streams
from tests.support import probe_until

pytestmark = [pytest.mark.django_db, pytest.mark.on_postgres]

SHARDS = 4
TTL_S = 2.0  # short, so a takeover is quick; long enough for a pass on a loaded machine


def _ingester(client: redis.Redis, name: str) -> Ingester:
    return Ingester(client, batch=50, shards=SHARDS, leases=StreamLeases(client, TTL_S, name))


def _write(client: redis.Redis, rounds: range) -> None:
    batch = [
        ev.Event(ev.CONSUME_FAILED, 1_700_000_000_000 + n, "orders", "g", q, details={"n": n})
        for n in rounds
        for q in range(16)
    ]
    ev.append(client, batch, shards=SHARDS)


def _pass(*ingesters: Ingester) -> int:
    return sum(i.run_once(block_ms=0) for i in ingesters)


def _held(ingester: Ingester) -> set[str]:
    assert ingester.leases is not None
    return set(ingester.leases.held_streams(ingester.streams()))


def _until_split(a: Ingester, b: Ingester) -> tuple[set[str], set[str]]:
    """Passes of both until they have seen each other and each holds its share (a
    refresh each, then the retry of a stream the other had not released yet)."""

    def held() -> tuple[set[str], set[str]]:
        _pass(a, b)
        return _held(a), _held(b)

    def split(h: tuple[set[str], set[str]]) -> bool:
        return bool(h[0] and h[1]) and not h[0] & h[1] and h[0] | h[1] == set(a.streams())

    return probe_until(held, split)


def test_it_gives_each_member_every_nth_stream_of_the_sorted_members() -> None:
    streams = ["ls:events", *shard_streams(4)]

    assert assign(streams, ["b", "a"], "a") == ["ls:events", *shard_streams(4)[1::2]]
    assert assign(streams, ["b", "a"], "b") == shard_streams(4)[0::2]
    assert assign(streams, ["a"], "a") == streams
    assert assign(streams, ["a", "b"], "c") == [], "not a member (yet): nothing"
    assert assign(streams[:1], ["a", "b"], "b") == [], "more members than streams"


def test_it_splits_the_streams_and_stores_each_event_once(redis_client: redis.Redis) -> None:
    _write(redis_client, range(0, 40))
    a, b = _ingester(redis_client, "a"), _ingester(redis_client, "b")
    _until_split(a, b)
    while _pass(a, b):
        pass

    assert _held(a) | _held(b) == set(a.streams())
    assert len(_held(a) - {"ls:events"}) == len(_held(b) - {"ls:events"}) == SHARDS // 2
    assert sorted(Event.objects.values_list("stream_id", flat=True)) == sorted(
        e["id"] for e in read_all_events(redis_client)
    )
    assert a.stored + b.stored == 40 * 16
    assert [a.leases.publishing(), b.leases.publishing()].count(True) == 1  # type: ignore[union-attr]


def test_it_takes_over_the_streams_of_a_silent_ingester_after_its_lease(
    redis_client: redis.Redis,
) -> None:
    a, b = _ingester(redis_client, "a"), _ingester(redis_client, "b")
    _until_split(a, b)
    _write(redis_client, range(0, 20))
    while _pass(a, b):
        pass
    _write(redis_client, range(20, 40))  # a falls silent (killed) from here on

    taken = probe_until(lambda: (_pass(b), _held(b))[1], lambda h: h == set(b.streams()), 20)
    while _pass(b):
        pass

    assert taken == set(b.streams())
    assert b.leases is not None and b.leases.publishing()
    assert Event.objects.count() == 40 * 16
    assert sorted(Event.objects.values_list("stream_id", flat=True)) == sorted(
        e["id"] for e in read_all_events(redis_client)
    )


def test_a_cleanly_stopped_ingester_hands_its_streams_over_at_once(
    redis_client: redis.Redis,
) -> None:
    a, b = _ingester(redis_client, "a"), _ingester(redis_client, "b")
    _until_split(a, b)
    assert a.leases is not None and b.leases is not None

    a.leases.release_all()
    b.leases.refresh(b.streams())  # its next refresh, not a lease's life later

    assert _held(b) == set(b.streams())


def test_an_ingester_beyond_the_stream_count_stands_by(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    one = Ingester(redis_client, shards=1, leases=StreamLeases(redis_client, TTL_S, "a"))
    two = Ingester(redis_client, shards=1, leases=StreamLeases(redis_client, TTL_S, "b"))
    with caplog.at_level(logging.WARNING, "lockstep.dashboard.monitor.ingest"):
        probe_until(lambda: (_pass(one, two), _held(one))[1], lambda h: h == {"ls:events"})
        _pass(two)

    assert _held(two) == set()
    assert "standing by: 2 ingesters for 1 event streams" in caplog.text
