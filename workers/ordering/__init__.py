"""Ordering modes: one class per mode behind the contract in ``base`` (docs/semantics.md).

``worker_for`` is how the rebalance loop starts a queue: it never names a mode itself.
"""

from __future__ import annotations

from lockstep.workers.config import Ordering
from lockstep.workers.ordering.base import QueueWorker, WorkerEnv
from lockstep.workers.ordering.key import KeyOrderingWorker
from lockstep.workers.ordering.queue import QueueOrderingWorker
from lockstep.workers.refs import QueueRef

MODES: dict[Ordering, type[QueueWorker]] = {
    Ordering.QUEUE: QueueOrderingWorker,
    Ordering.KEY: KeyOrderingWorker,
}


def worker_for(env: WorkerEnv, ref: QueueRef, token: int | None) -> QueueWorker:
    """A new (not yet started) worker for ``ref`` under the subscription's ordering."""
    return MODES[Ordering(env.sub.ordering)](env, ref, token)


__all__ = [
    "MODES",
    "KeyOrderingWorker",
    "QueueOrderingWorker",
    "QueueWorker",
    "WorkerEnv",
    "worker_for",
]
