"""Flow control under key ordering (DESIGN.md §2): pulling a queue pauses when
``max_in_flight`` messages are dispatched and unfinished, and resumes once they have
drained to half of it; the number of unfinished messages never goes over the limit."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis

from lockstep.workers import Consumer, Producer, create_topic
from lockstep.workers.cards import KeyState
from lockstep.workers.config import Ordering
from lockstep.workers.ordering import KeyOrderingWorker
from tests.support import wait_until
from tests.workers.conftest import StartConsumer
from tests.workers.handlers import DELAY_ENV, gate
from tests.workers.harness import (
    body,
    events,
    fully_committed,
    handled,
    handled_count,
    order_violations,
)

TOPIC, GROUP = "orders", "billing-flow"
MAX_IN_FLIGHT = 20
KEYS, PER_KEY = 50, 8  # 400 messages: 20 times the limit


class StateSampler:
    """Reads a queue worker's reported key-level state every millisecond."""

    def __init__(self, worker: KeyOrderingWorker) -> None:
        self.worker = worker
        self.samples: list[KeyState] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> StateSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(0.001):
            self.samples.append(self.worker.key_state())


def _queue_worker(consumer: Consumer) -> KeyOrderingWorker:
    worker = wait_until(lambda: consumer.runners[0].workers.get(0), 10, "queue 0 to start")
    assert isinstance(worker, KeyOrderingWorker)
    return worker


def _resumed_flow(client: redis.Redis) -> list[dict[str, Any]] | None:
    """The flow events, once the last one is a resume."""
    flow = events(client, "flow_paused", "flow_resumed")
    return flow if flow and flow[-1]["type"] == "flow_resumed" else None


def test_it_pauses_a_queue_at_max_in_flight_and_resumes_it_at_half(
    redis_client: redis.Redis,
    producer: Producer,
    start_consumer: StartConsumer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(DELAY_ENV, "3")  # slow enough that pulling outruns the lanes
    create_topic(redis_client, TOPIC, 1)
    redis_client.set(gate("flow"), 1)
    sent = {f"order-{k:02d}": PER_KEY for k in range(KEYS)}
    for s in range(PER_KEY):
        for key in sent:
            producer.send(TOPIC, key, body(s, gate="flow"))

    consumer = start_consumer(
        TOPIC,
        GROUP,
        "keys-flow",
        ordering=Ordering.KEY,
        lanes=4,
        max_in_flight=MAX_IN_FLIGHT,
        flush_interval_ms=50,
    )
    with StateSampler(_queue_worker(consumer)) as sampler:
        wait_until(lambda: events(redis_client, "flow_paused"), 10, "the flow_paused event")
        time.sleep(0.5)  # paused: nothing more may be pulled while every handler waits
        gated = list(sampler.samples)
        assert handled_count(redis_client) == 0
        redis_client.delete(gate("flow"))
        wait_until(
            lambda: fully_committed(redis_client, TOPIC, GROUP, 1),
            30,
            "the queue to be committed to its end",
        )

    # Nothing finished while gated, so the mark stayed at 0 and exactly the limit was pulled.
    assert gated[-1]["in_flight"] == MAX_IN_FLIGHT and gated[-1]["low_water"] == 0
    assert gated[-1]["flow_paused"] is True
    assert max(s["in_flight"] for s in sampler.samples) == MAX_IN_FLIGHT
    assert order_violations(handled(redis_client), sent) == {}
    # The last resume may still be in the event buffer when the queue is committed.
    flow = wait_until(lambda: _resumed_flow(redis_client), 5, "the last flow_resumed")
    assert [e["type"] for e in flow[:2]] == ["flow_paused", "flow_resumed"]
    assert [e["type"] for e in flow] == ["flow_paused", "flow_resumed"] * (len(flow) // 2)
    for e in flow:
        assert e["details"]["max_in_flight"] == MAX_IN_FLIGHT
        if e["type"] == "flow_paused":
            assert e["details"]["in_flight"] >= MAX_IN_FLIGHT
        else:
            assert e["details"]["in_flight"] <= MAX_IN_FLIGHT // 2
    reported = [e["details"]["in_flight"] for e in events(redis_client, "key_state")]
    assert reported and max(reported) <= MAX_IN_FLIGHT
    print(f"{len(flow) // 2} pause/resume cycles, {len(sampler.samples)} samples")
