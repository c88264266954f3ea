"""The ingester's fleet writer sweeps a large fleet in steps of at most ``SLICE_PAIRS``
(queue, group) pairs, one a push, and reads the queues events named before each step: a
change the events tell of reaches the fleet state at the next push even while a sweep of
thousands of pairs is half done. The sweep is stamped, and the rows of what is gone
deleted, only when its last step is written. The plan of steps covers every queue once."""

from __future__ import annotations

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from lockstep.dashboard.monitor.live import Publisher
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.store.fleet import SLICE_PAIRS, FleetWriter, plan_slices
from lockstep.dashboard.web.store.models import FleetStamp, QueueStatus
from lockstep.workers.refs import QueueRef
from tests.dashboard.fleets import commit_event, make_fleet, set_max_offset

TOPICS = ["orders", "payments"]
GROUPS = ["mailer", "auditor"]


def _stored(ref: QueueRef, group: str) -> QueueStatus | None:
    return QueueStatus.objects.filter(topic=ref.topic, group=group, queue=ref.queue).first()


@pytest.mark.django_db
@pytest.mark.on_postgres
def test_a_named_queue_is_read_at_the_next_push_while_a_sweep_is_half_done(
    redis_client: redis.Redis,
) -> None:
    pairs = make_fleet(redis_client, TOPICS, 600, GROUPS, lambda _t, q: 1 if q % 64 == 0 else 0)
    last = QueueRef("payments", 599)  # in the sweep's last step
    publisher = Publisher(get_redis())

    publisher.push()
    first_step = QueueStatus.objects.count()
    set_max_offset(redis_client, last, 900)
    publisher.record([commit_event(last, "mailer")], "1-1")
    publisher.push()
    row = _stored(last, "mailer")
    swept_midway = FleetStamp.objects.get().swept_ms
    while publisher.writer.sweeping:
        publisher.push()
    publisher.stop()

    assert pairs == 2400
    assert 0 < first_step <= SLICE_PAIRS
    assert row is not None and (row.max_offset, row.lag) == (900, 900)
    assert swept_midway == 0
    assert QueueStatus.objects.count() == pairs
    assert FleetStamp.objects.get().swept_ms > 0


@pytest.mark.django_db
@pytest.mark.on_postgres
def test_a_completed_sweep_deletes_the_rows_of_a_topic_gone_and_keeps_the_rest(
    redis_client: redis.Redis,
) -> None:
    make_fleet(redis_client, TOPICS, 600, GROUPS)
    QueueStatus.objects.create(topic="gone", group="g", queue=0, max_offset=1, lag=1)
    QueueStatus.objects.create(topic="orders", group="mailer", queue=600, max_offset=1, lag=1)

    FleetWriter(get_redis()).sweep()

    assert not QueueStatus.objects.filter(topic="gone").exists()
    assert not QueueStatus.objects.filter(queue=600).exists()  # past the topic's queues
    assert QueueStatus.objects.count() == 2400


@given(
    topics=st.dictionaries(
        st.text("abc", min_size=1, max_size=3),
        st.tuples(st.integers(0, 3000), st.integers(1, 40)),
        max_size=6,
    ),
    pairs=st.integers(1, 2048),
)
def test_the_plan_reads_every_queue_once_in_steps_of_at_most_the_slice(
    topics: dict[str, tuple[int, int]], pairs: int
) -> None:
    plan = plan_slices(topics, pairs)

    seen = [(name, q) for step in plan for name, queues in step for q in queues]
    assert sorted(seen) == sorted((n, q) for n, (qs, _) in topics.items() for q in range(qs))
    for step in plan:
        names = [name for name, _ in step]
        assert len(names) == len(set(names))
        size = sum(len(queues) * topics[name][1] for name, queues in step)
        one_queue = len(seen) > 0 and sum(len(queues) for _, queues in step) == 1
        assert size <= pairs or one_queue
