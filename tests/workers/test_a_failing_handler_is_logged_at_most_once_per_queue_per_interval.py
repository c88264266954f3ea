"""A handler's failure reaches the host process's log, on the logger ``lockstep``, with
where it happened; rate-limited, so a poison message retried every 10 ms writes one record
per queue per interval, and the next record says how many were left out
(workers/handler_log.py). A suspend the handler asked for is flow control: DEBUG only."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any

import pytest
import redis

from lockstep import Consumer, Producer, Subscription, create_topic
from tests.support import wait_until
from tests.workers.handlers import CALLS, fail_flag
from tests.workers.harness import FAST, RECORD_HANDLER, body, fully_committed

TOPIC, GROUP = "payments", "ledger"
# Short enough that a test sees several windows; long against the 10 ms retries, so each
# window holds dozens of failures.
INTERVAL_S = 0.3
TIMINGS = replace(FAST, handler_log_interval_s=INTERVAL_S)
# Retries every 10 ms under either ordering (the suspend, or the key's back-off).
FAST_RETRIES: dict[str, dict[str, Any]] = {
    "queue": {"suspend_ms": 10},
    "key": {"ordering": "key", "retry_initial_ms": 10, "retry_factor": 1.0, "retry_max_ms": 10},
}
FAILURES = 60


def _records(caplog: pytest.LogCaptureFixture, level: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "lockstep" and r.levelno == level]


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return dict(record.__dict__["lockstep"])


def _calls(client: redis.Redis, queue: int, offset: int) -> int:
    return int(client.hget(CALLS, f"{queue}:{offset}") or 0)


def _start(redis_url: str, consumer_id: str, **sub: Any) -> Consumer:
    subscription = Subscription(TOPIC, GROUP, handler=RECORD_HANDLER, **sub)
    consumer = Consumer(redis_url, [subscription], timings=TIMINGS, consumer_id=consumer_id)
    consumer.start()
    return consumer


@pytest.mark.parametrize("ordering", sorted(FAST_RETRIES))
def test_it_logs_a_poison_message_a_bounded_number_of_times_and_counts_what_it_left_out(
    ordering: str,
    redis_client: redis.Redis,
    redis_url: str,
    producer: Producer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="lockstep")
    create_topic(redis_url, TOPIC, 1)  # a URL is enough
    redis_client.set(fail_flag("poison"), 1)
    poison = producer.send(TOPIC, "acct-7", body(0, raise_while="poison"))

    started = time.monotonic()
    consumer = _start(redis_url, f"log-{ordering}", **FAST_RETRIES[ordering])
    try:
        wait_until(
            lambda: (
                _calls(redis_client, 0, poison.offset) >= FAILURES
                and len(_records(caplog, logging.ERROR)) >= 2
            ),
            30,
            "the poison message to fail many times over two log intervals",
        )
        redis_client.delete(fail_flag("poison"))
        wait_until(lambda: fully_committed(redis_client, TOPIC, GROUP, 1), 15, "the fix")
        failed = _calls(redis_client, 0, poison.offset) - 1  # the last call succeeded
        last = _records(caplog, logging.ERROR)[-1]
        # One more failure once an interval has passed since the last record: its record
        # carries the count of the poison's failures that were left out after that one.
        wait_until(lambda: time.time() - last.created > INTERVAL_S, 5, "a quiet interval")
        redis_client.set(fail_flag("again"), 1)
        again = producer.send(TOPIC, "acct-7", body(1, raise_while="again"))
        wait_until(
            lambda: _records(caplog, logging.ERROR)[-1] is not last, 10, "the next failure's record"
        )
        redis_client.delete(fail_flag("again"))
        wait_until(lambda: fully_committed(redis_client, TOPIC, GROUP, 1), 15, "the second fix")
        elapsed = time.monotonic() - started
    finally:
        consumer.stop()

    records = _records(caplog, logging.ERROR)
    assert len(records) <= elapsed / INTERVAL_S + 2, "at most one record per queue per interval"
    assert len(records) < failed / 5
    # Every failure up to the last record is either logged or counted in the next record.
    assert sum(1 + _fields(r)["not_logged"] for r in records) == failed + 1
    assert _fields(records[1])["not_logged"] > 0
    assert "since the last record were not logged" in records[1].getMessage()

    first = records[0]
    assert _fields(first) == {
        "topic": TOPIC,
        "group": GROUP,
        "queue": 0,
        "offset": poison.offset,
        "key": "acct-7",
        "batch": 1,
        "attempt": 1,
        "handler": RECORD_HANDLER,
        "not_logged": 0,
    }
    assert first.getMessage() == (
        f"handler {RECORD_HANDLER} raised RuntimeError: card declined for acct-7: "
        f"topic={TOPIC} group={GROUP} queue=0 offset={poison.offset} key='acct-7' attempt=1"
    )
    assert first.exc_info is not None and isinstance(first.exc_info[1], RuntimeError)
    assert _fields(records[-1])["offset"] == again.offset


def test_it_logs_a_requested_suspend_at_debug_and_a_value_that_is_no_status_as_a_warning(
    redis_client: redis.Redis,
    redis_url: str,
    producer: Producer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="lockstep")
    create_topic(redis_client, TOPIC, 1)
    suspends = producer.send(TOPIC, "acct-1", body(0, poison=True))  # always SUSPEND
    returns_none = producer.send(TOPIC, "acct-2", body(0, none_once=True))

    consumer = _start(redis_url, "log-statuses", **FAST_RETRIES["key"])
    try:
        wait_until(
            lambda: (
                _calls(redis_client, 0, returns_none.offset) == 2
                and _calls(redis_client, 0, suspends.offset) >= 3
            ),
            15,
            "both messages to have failed",
        )
    finally:
        consumer.stop()

    assert _records(caplog, logging.ERROR) == []
    [warning] = _records(caplog, logging.WARNING)
    assert _fields(warning)["offset"] == returns_none.offset
    assert "handler returned None, expected a ConsumeStatus" in warning.getMessage()
    debug = _records(caplog, logging.DEBUG)
    requested = [r for r in debug if _fields(r)["offset"] == suspends.offset]
    assert requested, "a requested suspend is logged at DEBUG"
    assert "handler returned SUSPEND_CURRENT_QUEUE_A_MOMENT" in requested[0].getMessage()
