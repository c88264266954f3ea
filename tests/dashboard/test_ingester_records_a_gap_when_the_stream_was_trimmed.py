"""The event stream is bounded (LOCKSTEP_EVENTS_MAXLEN). When it was trimmed past the
ingester's cursor while the web side was away, the lost events cannot come back, but the
loss must not be silent: the ingester records one ``events_lost`` event saying how many
were lost and where it resumed, logs it at ERROR, and counts it for ``/metrics``."""

from __future__ import annotations

import logging

import pytest
import redis

from lockstep.dashboard.monitor.ingest import EVENTS_LOST, Ingester
from lockstep.dashboard.web.store.models import Event, EventCounter, IngestCursor
from lockstep.workers import keys

pytestmark = [pytest.mark.django_db, pytest.mark.on_postgres]


def _append(client: redis.Redis, count: int, start: int = 0) -> list[str]:
    pipe = client.pipeline(transaction=False)
    for i in range(start, start + count):
        pipe.xadd(
            keys.EVENTS,
            {
                "type": "offset_committed",
                "ts": 1_700_000_000_000 + i,
                "topic": "orders",
                "group": "mailer",
                "queue": i % 4,
                "details": f'{{"offset": {i}}}',
            },
        )
    return [i.decode() for i in pipe.execute()]


def _drain(ingester: Ingester) -> None:
    while ingester.run_once(block_ms=0):
        pass


def _stored_ids() -> list[str]:
    return list(
        Event.objects.exclude(type=EVENTS_LOST).order_by("id").values_list("stream_id", flat=True)
    )


def _counter(name: str) -> int:
    row = EventCounter.objects.filter(name=name).first()
    return row.value if row else 0


def test_it_records_how_many_events_were_trimmed_past_the_cursor(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    ingester = Ingester(redis_client)
    first = _append(redis_client, 10)
    _drain(ingester)
    later = _append(redis_client, 100, start=10)
    redis_client.xtrim(keys.EVENTS, maxlen=30, approximate=False)  # 70 never stored

    with caplog.at_level(logging.ERROR, logger="lockstep.dashboard.monitor.ingest"):
        _drain(ingester)

    (lost,) = Event.objects.filter(type=EVENTS_LOST)
    assert lost.details["lost"] == 70
    assert lost.details["after_id"] == first[-1]
    assert lost.details["resumed_at_id"] == later[70]
    assert lost.stream_id == f"lost:{later[70]}"
    assert _stored_ids() == first + later[70:]
    assert _counter("events_lost") == 70
    assert _counter("event_stream_gaps") == 1
    assert any("70 events" in r.getMessage() and r.levelno == logging.ERROR for r in caplog.records)
    assert IngestCursor.objects.get().last_id == later[-1]


def test_it_reports_events_trimmed_before_it_first_ran(redis_client: redis.Redis) -> None:
    sent = _append(redis_client, 50)
    redis_client.xtrim(keys.EVENTS, maxlen=20, approximate=False)

    _drain(Ingester(redis_client))

    (lost,) = Event.objects.filter(type=EVENTS_LOST)
    assert lost.details["lost"] == 30
    assert lost.details["after_id"] == "0-0"
    assert _stored_ids() == sent[30:]


def test_it_raises_no_alarm_when_only_stored_events_were_trimmed(redis_client: redis.Redis) -> None:
    ingester = Ingester(redis_client)
    sent = _append(redis_client, 50)
    _drain(ingester)
    redis_client.xtrim(keys.EVENTS, maxlen=5, approximate=False)
    sent += _append(redis_client, 5, start=50)

    _drain(ingester)

    assert _stored_ids() == sent
    assert not Event.objects.filter(type=EVENTS_LOST).exists()
    assert _counter("event_stream_gaps") == 0


def test_it_counts_exactly_across_a_restart_of_the_ingester(redis_client: redis.Redis) -> None:
    sent = _append(redis_client, 40)
    _drain(Ingester(redis_client, batch=7))  # several batches, then the process "ends"
    sent += _append(redis_client, 60, start=40)
    redis_client.xtrim(keys.EVENTS, maxlen=25, approximate=False)

    _drain(Ingester(redis_client, batch=7))

    (lost,) = Event.objects.filter(type=EVENTS_LOST)
    assert lost.details["lost"] == 35
    assert _stored_ids() == sent[:40] + sent[75:]


def test_it_says_unknown_for_a_cursor_without_a_position_then_counts_again(
    redis_client: redis.Redis,
) -> None:
    ingester = Ingester(redis_client)
    sent = _append(redis_client, 10)
    _drain(ingester)
    # A cursor written before positions were tracked: the number lost cannot be known.
    IngestCursor.objects.update(position=None)
    ingester = Ingester(redis_client)
    _append(redis_client, 30, start=10)
    redis_client.xtrim(keys.EVENTS, maxlen=10, approximate=False)

    _drain(ingester)
    _append(redis_client, 30, start=40)
    redis_client.xtrim(keys.EVENTS, maxlen=5, approximate=False)
    _drain(ingester)

    unknown, exact = Event.objects.filter(type=EVENTS_LOST).order_by("id")
    assert unknown.details["after_id"] == sent[-1]
    assert unknown.details["lost"] is None
    assert exact.details["lost"] == 25
    assert IngestCursor.objects.get().position == 70
