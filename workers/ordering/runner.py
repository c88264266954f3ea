"""Who runs the owned queues' loops (docs/reading.md).

A queue worker's loop (``QueueWorker.steps``) is a generator: it does a bounded piece of
work (a read, a batch, a flush) and then yields a ``Wait`` saying when it wants to run
again. The runners that drive it:

- ``workers.ordering.scheduler.QueuePool``: a bounded pool of threads for every queue of a
  subscription, and one reader that waits for new entries of all the idle queues at once;
- ``workers.ordering.cluster_pool.ClusterQueuePool``: the pool on a Redis Cluster, where
  an append wakes a waiting queue through sharded pub/sub;
- ``QueueThreads``: a thread per queue, as the runtime did before: a ``Wait`` for data is
  a blocking ``XREAD`` of that one stream, any other wait an event wait that a poke ends
  early (a cluster of Redis 6, which has no sharded pub/sub).

A runner steps each worker from one thread at a time, so a queue's batches never overlap;
``poke`` (a renewal of a stale lock, a drop) ends the current wait early. Waking a worker
early is always harmless: its loop checks its state again. A wait for data that ended
because entries came hands them to the worker (the value of its ``yield``, at most
``HAND_COUNT``): the read that woke it is the worker's read, not one more.
"""

from __future__ import annotations

import threading
from collections.abc import Generator
from dataclasses import dataclass
from typing import Protocol

import redis

from lockstep.workers import keys
from lockstep.workers.redis_types import Entry, xread_entries
from lockstep.workers.refs import QueueRef

# The most entries a wait for data hands its worker: a queue ordering's prefetch.
HAND_COUNT = 64
# What a step is sent when it runs again: the entries of the queue's stream at or above
# the ``data_from`` it waited for, in order (fewer than ``HAND_COUNT``: all there were), or
# ``None`` when the wait ended otherwise (time, a poke) or was not for data.
Handed = list[Entry] | None


@dataclass(frozen=True)
class Wait:
    """What a step waits for before the next: ``seconds`` (``None``: no time limit), and,
    when ``data_from`` is set, sooner an entry of the queue's stream at or above that
    offset. A poke always ends it. ``busy``: a step at once (no wait) after work on
    messages, which a pool may grow for; not for a one-off step (``FINISHING``)."""

    seconds: float | None = 0.0
    data_from: int | None = None
    busy: bool = True


READY = Wait(0.0)
# The step that finishes a worker (waits for its messages in progress, writes its final
# commit): at once, but one-off.
FINISHING = Wait(0.0, busy=False)


class Steppable(Protocol):
    """What a runner needs of a queue worker."""

    ref: QueueRef
    # Whether the step that a wait for data ends with entries only hands them on (key
    # ordering gives them to its lanes; it runs no handler and waits for nothing): a
    # runner may then run it on the thread that read the entries (docs/reading.md).
    inline_data_steps: bool

    def steps(self) -> Generator[Wait, Handed, None]: ...

    def stepped_out(self) -> None:
        """Called once the steps are over (they returned or raised)."""


class Runner(Protocol):
    def start(self, worker: Steppable) -> None: ...

    def poke(self, worker: Steppable) -> None: ...

    def stop(self) -> None:
        """Let the runner's own threads end once its workers have stepped out."""


def after_offset(offset: int) -> str:
    """The stream ID just before ``offset``: what ``XREAD`` takes to return entries at or
    above it (entry IDs are ``<offset>-1``: docs/redis-layout.md)."""
    return f"{offset - 1}-1" if offset > 0 else "0-0"


class QueueThreads:
    """A thread per queue; a wait for data blocks in ``XREAD`` for up to ``block_s``."""

    def __init__(self, client: redis.Redis, block_s: float) -> None:
        self.client = client
        self.block_s = block_s
        self._pokes: dict[int, threading.Event] = {}

    def start(self, worker: Steppable) -> None:
        poked = threading.Event()
        self._pokes[id(worker)] = poked
        thread = threading.Thread(
            target=self._run,
            args=(worker, poked),
            name=f"lockstep-{worker.ref.topic}-{worker.ref.queue}",
            daemon=True,
        )
        thread.start()

    def poke(self, worker: Steppable) -> None:
        poked = self._pokes.get(id(worker))
        if poked is not None:
            poked.set()

    def stop(self) -> None:
        """Nothing to do: each queue's thread ends with its worker."""

    def _run(self, worker: Steppable, poked: threading.Event) -> None:
        steps = worker.steps()
        try:
            wait = next(steps)
            while True:
                wait = steps.send(self._wait(worker.ref, wait, poked))
        except StopIteration:
            pass
        finally:
            steps.close()
            self._pokes.pop(id(worker), None)
            worker.stepped_out()

    def _wait(self, ref: QueueRef, wait: Wait, poked: threading.Event) -> Handed:
        if poked.is_set():
            poked.clear()
            return None
        if wait.data_from is not None:
            block_s = self.block_s if wait.seconds is None else min(self.block_s, wait.seconds)
            stream = keys.stream(ref)
            block_ms = max(1, int(block_s * 1000))
            try:
                reply = self.client.xread(
                    {stream: after_offset(wait.data_from)}, count=HAND_COUNT, block=block_ms
                )
            except redis.RedisError:
                # The worker's own next read meets the failure and handles it.
                poked.wait(block_s)
                return None
            return xread_entries(reply) or None
        if wait.seconds is None or wait.seconds > 0:
            poked.wait(wait.seconds)
            poked.clear()
        return None
