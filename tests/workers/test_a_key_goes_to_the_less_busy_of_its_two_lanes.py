"""Lanes place a key with no messages in any lane on the less busy of its two choices, and
keep a key's messages in one lane while it has any there (docs/lanes.md §2): per key,
messages still run one at a time, in the order they were submitted."""

from __future__ import annotations

import threading
from collections import defaultdict

from lockstep.workers.lanes import LanePool, Task, Verdict, lane_choices
from lockstep.workers.message import Message
from tests.support import wait_until


def _message(key: str, offset: int) -> Message:
    return Message("orders", 0, offset, key, b"", {}, 0.0)


def _key_with_two_lanes(
    lanes: int, first: int | None = None, other_than: str = ""
) -> tuple[str, int, int]:
    """A key whose two lanes differ (and whose first is ``first``, if given)."""
    for i in range(10_000):
        a, b = lane_choices(f"k{i}", lanes)
        if a != b and first in (None, a) and f"k{i}" != other_than:
            return f"k{i}", a, b
    raise AssertionError("no such key")


class Recorder:
    """A lane client that records which lane ran each message, and catches a key running
    in two lanes at once or out of order; ``gate`` holds the messages of ``held_key``."""

    serial = 1

    def __init__(self, held_key: str = "") -> None:
        self.lock = threading.Lock()
        self.gate = threading.Event()
        self.held_key = held_key
        self.running: set[str] = set()
        self.ran: dict[str, list[tuple[int, str]]] = defaultdict(list)
        self.overlaps: list[str] = []
        self.count = 0

    def process(self, task: Task) -> tuple[Verdict, float]:
        key = task.message.key
        with self.lock:
            if key in self.running:
                self.overlaps.append(key)
            self.running.add(key)
        if key == self.held_key:
            self.gate.wait(10)
        with self.lock:
            self.running.discard(key)
            self.ran[key].append((task.message.offset, threading.current_thread().name))
            self.count += 1
        return Verdict.DONE, 0.0

    def park_tasks(self, key: str, tasks: list[Task]) -> None:
        raise AssertionError("nothing is parked here")


def _wait_for(client: Recorder, count: int) -> None:
    wait_until(lambda: client.count == count, 10, f"{count} messages to run")


def test_a_new_key_goes_to_the_less_busy_of_its_two_lanes() -> None:
    pool = LanePool(4)
    key, first, second = _key_with_two_lanes(4)
    blocker, _, _ = _key_with_two_lanes(4, first=first, other_than=key)
    client = Recorder(held_key=blocker)
    pool.start()
    try:
        for offset in range(3):  # three messages waiting in ``first``, one of them running
            pool.submit(Task(_message(blocker, offset), client))
        pool.submit(Task(_message(key, 3), client))
        wait_until(lambda: client.ran[key], 5, f"{key} to run while {blocker} is held")
        assert client.ran[key] == [(3, f"lockstep-lane-{second}")]
        client.gate.set()
        wait_until(lambda: client.count == 4, 5, "every message to run")
        assert [lane for _, lane in client.ran[blocker]] == [f"lockstep-lane-{first}"] * 3
    finally:
        client.gate.set()
        pool.stop()


def test_an_idle_key_is_placed_by_its_first_choice() -> None:
    pool = LanePool(4)
    key, first, _ = _key_with_two_lanes(4)
    client = Recorder()
    pool.start()
    try:
        pool.submit(Task(_message(key, 0), client))
        wait_until(lambda: client.count == 1, 5, "the message to run")
        assert client.ran[key] == [(0, f"lockstep-lane-{first}")]
    finally:
        pool.stop()


def test_a_keys_messages_run_one_at_a_time_in_order_as_the_key_moves_between_lanes() -> None:
    pool = LanePool(3)
    client = Recorder()
    keys = [f"order-{i}" for i in range(60)]
    per_key = 40
    pool.start()
    try:
        # Keys are placed afresh once their lane ran all their messages: a round in the
        # other order meets other loads, and a round sent before the last one drained
        # races with keys leaving their lanes.
        for offset in range(per_key):
            for key in keys if offset % 2 else reversed(keys):
                pool.submit(Task(_message(key, offset), client))
            if offset % 4 == 0:
                _wait_for(client, len(keys) * (offset + 1))
        wait_until(lambda: client.count == len(keys) * per_key, 30, "every message to run")
    finally:
        pool.stop()
    assert client.overlaps == []
    assert {k: [o for o, _ in client.ran[k]] for k in keys} == {
        k: list(range(per_key)) for k in keys
    }
    moved = [k for k in keys if len({lane for _, lane in client.ran[k]}) > 1]
    assert moved, "no key changed lane: the test did not exercise a move"
