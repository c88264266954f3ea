"""Handlers the worker tests run, in the test process and in `lockstep consume` children.

``record`` appends one JSON record per successfully handled message to the Redis list
``HANDLED`` (in the order Redis received them, which is a total order across processes),
so a test can check loss, per-key order and who handled what when. A record holds:

    k    the message's key          o    its offset         q    its queue
    s    the body's "seq" (the message's position among its key's messages, or None)
    c    the consumer id             tok  the fencing token  pid  the process id
    t0   time.monotonic() when handling started, t1 when it ended (CLOCK_MONOTONIC is
         system-wide on Linux, so these compare across processes on one machine)
    ts   time.time() at the end    h    the message's headers

What a message does is driven by its body, a JSON object:

    {"seq": 3}                   handled after a random delay of 0..LOCKSTEP_TEST_MAX_DELAY_MS
    {"seq": 3, "poison": true}   always fails (SUSPEND_CURRENT_QUEUE_A_MOMENT)
    {"seq": 3, "none_once": true}  the first call returns None, later calls succeed
    {"seq": 3, "sleep_once": 2.5}  the first consumer to reach it claims ``SLOW_CLAIM``
                                   (pid, consumer, offset) and sleeps that long inside
                                   the handler, so a test can freeze it mid-message
    {"seq": 3, "fail_while": "x"}  fails while the Redis key ``fail_flag("x")`` exists, so a
                                   test decides when the message starts to succeed
    {"seq": 3, "raise_while": "x"} the same, but raising ``RuntimeError`` (a traceback)
    {"seq": 3, "gate": "g"}        waits inside the handler while ``gate("g")`` exists, so
                                   a test can hold handlers busy and then let them go

Every call of a special message (poison, none_once, sleep_once, fail_while, gate) is counted
in the hash ``CALLS`` under "<queue>:<offset>". A batch is recorded only when all of it
succeeds. Records also carry ``w0``, time.time() when handling started, to compare with
times Redis wrote (a dead letter's ``dead_at``).
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Sequence
from functools import cache
from typing import Any

import redis

from lockstep.workers import ConsumeStatus
from lockstep.workers.connection import connect
from lockstep.workers.message import ConsumeContext, Message

HANDLED = "test:handled"
CALLS = "test:calls"
SLOW_CLAIM = "test:slow:claim"
DELAY_ENV = "LOCKSTEP_TEST_MAX_DELAY_MS"
GATE_POLL_S = 0.005


def fail_flag(name: str) -> str:
    return f"test:fail:{name}"


def gate(name: str) -> str:
    return f"test:gate:{name}"


@cache
def _client(url: str) -> redis.Redis:
    return connect(url)


def client() -> redis.Redis:
    return _client(os.environ["REDIS_URL"])


def _spec(message: Message) -> dict[str, Any]:
    try:
        spec = json.loads(message.body)
    except ValueError:
        return {}
    return spec if isinstance(spec, dict) else {}


def _special(spec: dict[str, Any]) -> bool:
    return any(
        name in spec
        for name in ("poison", "none_once", "sleep_once", "fail_while", "raise_while", "gate")
    )


def _count_call(message: Message) -> int:
    return int(client().hincrby(CALLS, f"{message.queue}:{message.offset}", 1))


def _delay() -> None:
    max_ms = float(os.environ.get(DELAY_ENV, "0") or 0)
    if max_ms > 0:
        time.sleep(random.uniform(0, max_ms) / 1000.0)


def _sleep_if_first(message: Message, ctx: ConsumeContext, seconds: float) -> None:
    claim = json.dumps(
        {
            "pid": os.getpid(),
            "consumer": ctx.consumer_id,
            "offset": message.offset,
            "queue": message.queue,
        }
    )
    if client().set(SLOW_CLAIM, claim, nx=True):
        time.sleep(seconds)


def record(messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus | None:
    records: list[str] = []
    for message in messages:
        started, started_wall = time.monotonic(), time.time()
        spec = _spec(message)
        calls = _count_call(message) if _special(spec) else 0
        if spec.get("poison"):
            return ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        if spec.get("none_once") and calls == 1:
            return None  # not a ConsumeStatus: the runtime must treat it as a failure
        if "fail_while" in spec and client().exists(fail_flag(str(spec["fail_while"]))):
            return ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        if "raise_while" in spec and client().exists(fail_flag(str(spec["raise_while"]))):
            raise RuntimeError(f"card declined for {message.key}")
        while "gate" in spec and client().exists(gate(str(spec["gate"]))):
            time.sleep(GATE_POLL_S)
        if "sleep_once" in spec:
            _sleep_if_first(message, ctx, float(spec["sleep_once"]))
        _delay()
        records.append(
            json.dumps(
                {
                    "k": message.key,
                    "o": message.offset,
                    "q": message.queue,
                    "s": spec.get("seq"),
                    "c": ctx.consumer_id,
                    "tok": ctx.token,
                    "pid": os.getpid(),
                    "t0": started,
                    "t1": time.monotonic(),
                    "ts": time.time(),
                    "w0": started_wall,
                    "h": message.headers,
                }
            )
        )
    client().rpush(HANDLED, *records)
    return ConsumeStatus.SUCCESS
