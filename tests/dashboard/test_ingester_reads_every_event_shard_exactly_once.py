"""With ``LOCKSTEP_EVENT_SHARDS=4`` the ingester reads all four event streams: it stores
every event once, each queue's events in the order they were written, with one cursor per
stream; a restarted ingester resumes each stream where it was, and a stale one storing
again stores nothing twice. It also reads shards that writers with another setting
registered, and it works on a Redis Cluster (each read's MULTI holds one stream only)."""

from __future__ import annotations

from collections import defaultdict

import pytest
import redis

from lockstep.dashboard.monitor.ingest import EVENTS_LOST, Ingester
from lockstep.dashboard.web.store.models import Event, IngestCursor
from lockstep.workers import events as ev
from lockstep.workers import keys
from lockstep.workers.events import read_all_events, shard_streams
from lockstep.workers.redis_types import entries

pytestmark = [pytest.mark.django_db, pytest.mark.on_postgres]

TOPICS = ("orders", "payments", "mail")
QUEUES = 8


@pytest.fixture
def client(redis_on_either: redis.Redis) -> redis.Redis:
    return redis_on_either


def _write(client: redis.Redis, rounds: range, shards: int | None = None) -> None:
    """Round ``n`` writes one event with details ``n`` to every queue of every topic."""
    batch = [
        ev.Event(ev.CONSUME_FAILED, 1_700_000_000_000 + n, t, "g", q, details={"n": n})
        for n in rounds
        for t in TOPICS
        for q in range(QUEUES)
    ]
    assert ev.append(client, batch, shards=shards) == len(batch)


def _drain(ingester: Ingester) -> None:
    while ingester.run_once(block_ms=0):
        pass


def _stored_order() -> dict[tuple[str, int], list[int]]:
    """Per queue, the ``n`` of its stored events in database order."""
    out: dict[tuple[str, int], list[int]] = defaultdict(list)
    for topic, queue, details in (
        Event.objects.exclude(type=EVENTS_LOST)
        .order_by("id")
        .values_list("topic", "queue", "details")
    ):
        assert queue is not None
        out[(topic, queue)].append(details["n"])
    return dict(out)


def _every_queue(rounds: int) -> dict[tuple[str, int], list[int]]:
    return {(t, q): list(range(rounds)) for t in TOPICS for q in range(QUEUES)}


def test_it_stores_every_shard_s_events_once_in_per_queue_order_across_a_restart(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCKSTEP_EVENT_SHARDS", "4")
    _write(client, range(0, 30))
    first = Ingester(client, batch=25)
    for _ in range(3):  # part of the way through, then the process "ends"
        first.run_once(block_ms=0)
    assert 0 < Event.objects.count() < 30 * len(TOPICS) * QUEUES

    _write(client, range(30, 50))
    restarted = Ingester(client, batch=25)  # its cursors come from the database
    _drain(restarted)
    _drain(first)  # a stale ingester replaying what was stored stores nothing again

    assert Event.objects.count() == 50 * len(TOPICS) * QUEUES
    assert _stored_order() == _every_queue(50)
    stored = sorted(Event.objects.values_list("stream_id", flat=True))
    assert stored == sorted(e["id"] for e in read_all_events(client))
    assert {s.split(":")[0] for s in stored} == {"s0", "s1", "s2", "s3"}
    shard_cursors = {c.name: c.last_id for c in IngestCursor.objects.all() if c.name != "events"}
    assert shard_cursors == {
        s: entries(client.xrevrange(s, count=1))[0][0].decode() for s in shard_streams(4)
    }
    assert restarted.stored + first.stored == Event.objects.count()


def test_it_reads_the_shards_writers_registered_whatever_its_own_setting(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCKSTEP_EVENT_SHARDS", "1")  # the ingester's own setting
    _write(client, range(0, 10), shards=4)  # writers configured with 4
    _write(client, range(10, 20), shards=3)  # then with 3: the fourth shard is idle

    _drain(Ingester(client))

    assert Event.objects.count() == 20 * len(TOPICS) * QUEUES
    assert set(Ingester(client).streams()) == {keys.EVENTS, *shard_streams(4)}
    # A queue whose shard changed with the count: its events are all there, and each
    # stream's part is in order (across a change of shard count the parts may interleave).
    stored = _stored_order()
    assert {k: sorted(v) for k, v in stored.items()} == _every_queue(20)
    for seq in stored.values():
        assert [n for n in seq if n < 10] == list(range(10))
        assert [n for n in seq if n >= 10] == list(range(10, 20))
