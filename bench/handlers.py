"""Handlers used by the benchmarks.

``checked_*`` (throughput cases) keep their bookkeeping in the consumer process, so they
cost the runtime almost nothing: per key the highest offset handled, a count of order
violations (an offset arriving below one already handled for its key) and of duplicates,
and the wall-clock times of the first and the last completion. They publish it to the hash
``bench:stats:<topic>:<group>`` every 0.25 s and once more (with ``final``) when
``LOCKSTEP_BENCH_TOTAL`` messages were handled; the messages handled after that are a new
phase, counted and timed from zero (the per-key order checks go on across phases).

``recorded_sleep10`` (the kill/restart case) records every completion in Redis, where it
survives the process: ``bench:{<topic>:<group>}:handled`` counts handlings per
``"queue:offset"`` and an order violation is a *first* handling of an offset below the
highest offset already handled for its key (re-handling after a restart is allowed).
``LOCKSTEP_BENCH_SLOW_KEY``'s first message in the process sleeps
``LOCKSTEP_BENCH_SLOW_S`` seconds, holding its queue's low-water mark behind.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

import redis
from redis.commands.core import Script

from lockstep.workers.connection import connect
from lockstep.workers.message import ConsumeContext, ConsumeStatus, Message

# A typical I/O-bound handler (a database write or an HTTP call): 10 ms.
IO_LATENCY_S = 0.01
# Handlers publish their counters this often: cheap, and fresh enough for the harness.
PUBLISH_EVERY_S = 0.25


def noop(messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
    return ConsumeStatus.SUCCESS


def stats_key(topic: str, group: str) -> str:
    return f"bench:stats:{topic}:{group}"


def handled_key(topic: str, group: str) -> str:
    return f"bench:{{{topic}:{group}}}:handled"


def key_max_key(topic: str, group: str) -> str:
    return f"bench:{{{topic}:{group}}}:keymax"


def wakeup_key(topic: str) -> str:
    return f"bench:wakeup:{topic}"


_client_lock = threading.Lock()
_client: redis.Redis | None = None


def _redis() -> redis.Redis:
    global _client
    with _client_lock:
        if _client is None:
            _client = connect(os.environ["REDIS_URL"])
        return _client


class _Stats:
    def __init__(self, topic: str, group: str) -> None:
        self.key = stats_key(topic, group)
        self.total = int(os.environ.get("LOCKSTEP_BENCH_TOTAL", "0") or 0)
        self.lock = threading.Lock()
        self.last: dict[str, int] = {}  # key -> highest offset handled
        self.count = 0
        self.violations = 0
        self.duplicates = 0
        self.first_t = 0.0
        self.first_n = 0
        self.last_t = 0.0
        self.published = 0.0
        self.final = False

    def record(self, messages: Sequence[Message]) -> None:
        violations = duplicates = 0
        last = self.last
        for m in messages:  # one key is never handled by two threads at once
            prev = last.get(m.key, -1)
            if m.offset > prev:
                last[m.key] = m.offset
            elif m.offset == prev:
                duplicates += 1
            else:
                violations += 1
        now = time.time()
        snapshot: dict[Any, Any] | None = None
        with self.lock:
            if self.final:
                self._next_phase()
            self.count += len(messages)
            self.violations += violations
            self.duplicates += duplicates
            if not self.first_t:
                self.first_t, self.first_n = now, self.count
            self.last_t = now
            done = bool(self.total) and self.count >= self.total and not self.final
            if done or now - self.published >= PUBLISH_EVERY_S:
                self.published = now
                self.final = self.final or done
                snapshot = {
                    "count": self.count,
                    "violations": self.violations,
                    "duplicates": self.duplicates,
                    "first_t": self.first_t,
                    "first_n": self.first_n,
                    "last_t": self.last_t,
                    "final": int(self.final),
                }
        if snapshot is not None:
            _redis().hset(self.key, mapping=snapshot)

    def _next_phase(self) -> None:
        """Count and time from zero (under the lock)."""
        self.count = 0
        self.first_t = self.last_t = self.published = 0.0
        self.first_n = 0
        self.final = False


_stats: dict[tuple[str, str], _Stats] = {}
_stats_lock = threading.Lock()


def _stats_for(ctx: ConsumeContext) -> _Stats:
    st = _stats.get((ctx.topic, ctx.group))
    if st is None:
        with _stats_lock:
            st = _stats.setdefault((ctx.topic, ctx.group), _Stats(ctx.topic, ctx.group))
    return st


def checked_noop(messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
    _stats_for(ctx).record(messages)
    return ConsumeStatus.SUCCESS


def many_queues(messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
    """``checked_noop``, except for wake-up probes (key ``w<n>``, a JSON body with the
    ``sent`` time): each pushes the milliseconds from its sending to this call onto
    ``wakeup_key(topic)``, and is not counted."""
    started = time.time()
    counted = [m for m in messages if not m.key.startswith("w")]
    for m in messages:
        if m.key.startswith("w"):
            sent = float(json.loads(m.body)["sent"])
            _redis().rpush(wakeup_key(ctx.topic), round((started - sent) * 1000, 3))
    if counted:
        _stats_for(ctx).record(counted)
    return ConsumeStatus.SUCCESS


def checked_sleep10(messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
    """An I/O-bound handler: 10 ms per message (the GIL is released while it waits)."""
    time.sleep(IO_LATENCY_S * len(messages))
    _stats_for(ctx).record(messages)
    return ConsumeStatus.SUCCESS


# KEYS: handled hash, key-max hash, stats hash. ARGV: "queue:offset", key, offset.
_RECORD_LUA = """
local n = redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
if n == 1 then
  local o = tonumber(ARGV[3])
  local m = tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '-1')
  if o < m then
    redis.call('HINCRBY', KEYS[3], 'violations', 1)
  else
    redis.call('HSET', KEYS[2], ARGV[2], o)
  end
end
return n
"""
_slow_done = threading.Event()
_record: list[Script] = []


def _record_script() -> Script:
    if not _record:
        with _client_lock:
            if not _record:
                _record.append(connect(os.environ["REDIS_URL"]).register_script(_RECORD_LUA))
    return _record[0]


def recorded_sleep10(messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
    record = _record_script()
    slow_key = os.environ.get("LOCKSTEP_BENCH_SLOW_KEY", "")
    slow_s = float(os.environ.get("LOCKSTEP_BENCH_SLOW_S", "0") or 0)
    keys = [
        handled_key(ctx.topic, ctx.group),
        key_max_key(ctx.topic, ctx.group),
        stats_key(ctx.topic, ctx.group),
    ]
    for m in messages:
        if slow_s and m.key == slow_key and not _slow_done.is_set():
            _slow_done.set()
            time.sleep(slow_s)
        time.sleep(IO_LATENCY_S)
        record(keys=keys, args=[f"{m.queue}:{m.offset}", m.key, m.offset])
    return ConsumeStatus.SUCCESS
