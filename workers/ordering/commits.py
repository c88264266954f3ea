"""A subscription's periodic commits: every queue of it in one round trip.

Under key ordering a queue's committed offset moves as its lanes finish messages, and is
written every ``flush_interval_ms`` (docs/lanes.md §5); under queue ordering the handled
position is written every ``commit_interval_ms`` (docs/semantics.md §3). ``Commits``
writes it for all the subscription's queues at once, from one thread: each interval it
takes a snapshot of every queue with something new to commit and sends all of them in one
pipeline (``Broker.commit_all``; one per node on a cluster), as RocketMQ persists all of
a consumer's offsets in one request. Each commit is still its own fenced script run, and
each queue handles its own result (a refused one drops its queue).

A queue's snapshot is taken under its commit lock, which is held until its result is
handled, so an older snapshot never lands after a newer one (``Committing``). A queue
whose lock is busy (writing a dead letter, parking, or a commit of its own) is left for
the next round. A queue writes its final commit itself, when it finishes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol

from lockstep.workers.broker import Broker, Commit, CommitResult

log = logging.getLogger(__name__)

# The least a round waits for a node of a cluster before it leaves that node's commits to
# the next round.
LATE_NODE_S = 1.0


class Committing(Protocol):
    """What ``Commits`` needs of a queue (``KeyOrderingWorker``, ``QueueOrderingWorker``)."""

    def commit_snapshot(self) -> Commit | None:
        """The commit to send now, holding the queue's commit lock until
        ``commit_done``; None (no lock held) when there is nothing new, or the lock is
        busy, or the queue may no longer write."""

    def commit_done(self, commit: Commit, result: CommitResult | Exception) -> None:
        """Handle the result of ``commit`` and release the commit lock."""


def held_snapshot(lock: threading.Lock, take: Callable[[], Commit | None]) -> Commit | None:
    """``Committing.commit_snapshot``'s locking: ``take()`` under ``lock``, taken without
    waiting (None when it is busy), which stays held when a commit is returned (until
    ``commit_done``) and is released otherwise."""
    if not lock.acquire(blocking=False):
        return None
    try:
        commit = take()
    except BaseException:
        lock.release()
        raise
    if commit is None:
        lock.release()
    return commit


class Commits:
    """The commit thread of one subscription (module docstring)."""

    def __init__(self, broker: Broker, interval_s: float, name: str) -> None:
        self.broker = broker
        self.interval_s = interval_s
        self.name = name
        self._queues: set[Committing] = set()
        self._mutex = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, queue: Committing) -> None:
        with self._mutex:
            self._queues.add(queue)

    def remove(self, queue: Committing) -> None:
        with self._mutex:
            self._queues.discard(queue)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"lockstep-commits-{self.name}", daemon=True
            )
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """End the thread (after the round in progress). The queues' own final commits
        are written as they finish, not here."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.commit_round()
            except Exception:  # a bug here must not end the commits of every queue
                log.exception("commit round of %s failed", self.name)

    def commit_round(self) -> int:
        """Commit every queue with something new, in one round trip; how many were sent."""
        with self._mutex:
            queues = list(self._queues)
        taken: list[tuple[Committing, Commit]] = []
        results: list[CommitResult | Exception] = []
        try:
            for queue in queues:
                commit = queue.commit_snapshot()
                if commit is not None:
                    taken.append((queue, commit))
            if taken:
                # A node later than an interval (a second at least: a loaded machine's
                # pause is not an outage) fails its queues' commits for this round; they
                # are taken again by the next one.
                results = self.broker.commit_all(
                    [commit for _, commit in taken],
                    node_wait_s=max(self.interval_s, LATE_NODE_S),
                )
        except Exception as exc:  # Redis away: every queue in the round meets the error
            results = [exc] * len(taken)
        finally:
            if len(results) != len(taken):  # interrupted: no commit lock may stay held
                results = [RuntimeError("the commit round was not sent")] * len(taken)
            for (queue, commit), result in zip(taken, results, strict=True):
                try:
                    queue.commit_done(commit, result)
                except Exception:  # its lock is released (commit_done); the others go on
                    log.exception("handling the commit of %s failed", commit.ref)
        return len(taken)
