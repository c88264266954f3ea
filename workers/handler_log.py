"""Telling the host process's log that a handler failed, without letting a poison message
flood it.

Every failure is already an event (``consume_failed``, and the attempts a dead letter
keeps), which the dashboard shows; but the first place a developer looks is the log of the
process that ran the handler. So each failure is also a record on the logger named
``lockstep`` (propagating to the host's root handlers, e.g. a Celery worker's output):

- a handler that **raised**: ERROR, with the traceback; one line without it for a
  ``HandlerFailure``, whose message tells the failure in full (a card declined);
- a handler that returned something that is **not a ``ConsumeStatus``** (``None``, a
  typo'd string): WARNING, no traceback — a bug, but nothing was thrown;
- a handler that **returned ``SUSPEND_CURRENT_QUEUE_A_MOMENT``**: DEBUG — it asked for
  the retry, so it is flow control, not an error.

Records are rate-limited per (group, topic, queue) and kind (failure, suspend): the first
is written at once, later ones within ``interval_s`` of it are only counted, and the next
record written says how many were left out. A poison message retried every 10 ms thus
writes one record per interval, not a hundred a second. A count with no later failure to
carry it is never written: those failures are in the event log.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from lockstep.workers.errors import HandlerFailure
from lockstep.workers.message import Message
from lockstep.workers.refs import QueueRef

# The logger adopters configure: exactly this name, the top of the package's loggers.
LOGGER_NAME = "lockstep"
log = logging.getLogger(LOGGER_NAME)

# One minute between two records of one queue: the first failure shows at once, and a
# message that keeps failing is told again about once a minute with the count of the
# failures in between (at the default 1 s suspend, 59 of them), which is enough to know it
# is still stuck. Every failure is in the event log and on the dashboard anyway. With
# 1,024 queues all failing at once it bounds the log at about 17 records a second.
HANDLER_LOG_INTERVAL_S = 60.0

FAILURE, SUSPEND = "failure", "suspend"


class HandlerLog:
    """Rate-limited log records of handler failures for one consumer process; called from
    queue threads and lane threads at once. See the module docstring for what is logged
    at which level. ``clock`` is injectable so the limit is testable without sleeping."""

    def __init__(
        self,
        interval_s: float = HANDLER_LOG_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._mutex = threading.Lock()
        # (group, topic, queue, kind) -> (when the last record was written, failures since)
        self._windows: dict[tuple[str, str, int, str], tuple[float, int]] = {}

    def raised(
        self,
        ref: QueueRef,
        group: str,
        handler: str,
        batch: Sequence[Message],
        exc: BaseException,
        error: str,
    ) -> None:
        """The handler raised ``exc`` on ``batch``: ERROR with the traceback, or without it
        for a ``HandlerFailure``. ``error`` is the exception in one line, as already made
        safely for the event (an exception's own ``__str__`` may raise)."""
        first_line = error.splitlines()[0] if error else type(exc).__name__
        traced = None if isinstance(exc, HandlerFailure) else exc
        self._write(logging.ERROR, ref, group, handler, batch, f"raised {first_line}", traced)

    def returned(
        self,
        ref: QueueRef,
        group: str,
        handler: str,
        batch: Sequence[Message],
        reason: str,
        *,
        requested: bool,
    ) -> None:
        """The handler returned a status other than SUCCESS: DEBUG when it ``requested``
        the suspend, WARNING when its value was not a ``ConsumeStatus`` (``reason``)."""
        level = logging.DEBUG if requested else logging.WARNING
        self._write(level, ref, group, handler, batch, reason, None)

    def _write(
        self,
        level: int,
        ref: QueueRef,
        group: str,
        handler: str,
        batch: Sequence[Message],
        what: str,
        exc: BaseException | None,
    ) -> None:
        if not log.isEnabledFor(level):
            return
        kind = SUSPEND if level == logging.DEBUG else FAILURE
        left_out = self._admit((group, ref.topic, ref.queue, kind))
        if left_out is None:
            return
        head, attempt = batch[0], batch[0].reconsume_times + 1
        offsets = str(head.offset) if len(batch) == 1 else f"{head.offset}..{batch[-1].offset}"
        fields: dict[str, Any] = {
            "topic": ref.topic,
            "group": group,
            "queue": ref.queue,
            "offset": head.offset,
            "key": head.key,
            "batch": len(batch),
            "attempt": attempt,
            "handler": handler,
            "not_logged": left_out,
        }
        # A fixed template with arguments, so log aggregators group the records of one
        # kind; the key is user data, shown with repr() so it cannot forge a line.
        log.log(
            level,
            "handler %s %s: topic=%s group=%s queue=%d offset=%s key=%r attempt=%d%s",
            handler,
            what,
            ref.topic,
            group,
            ref.queue,
            offsets,
            head.key,
            attempt,
            _left_out(left_out, kind, len(batch)),
            exc_info=exc,
            extra={"lockstep": fields},
        )

    def _admit(self, where: tuple[str, str, int, str]) -> int | None:
        """None when a record for ``where`` was written less than ``interval_s`` ago (this
        failure is counted); otherwise how many were counted since that record."""
        now = self._clock()
        with self._mutex:
            last = self._windows.get(where)
            if last is not None and now - last[0] < self.interval_s:
                self._windows[where] = (last[0], last[1] + 1)
                return None
            self._windows[where] = (now, 0)
            return last[1] if last is not None else 0


def _left_out(count: int, kind: str, batch: int) -> str:
    """The tail of a record: the batch size when above 1, and the failures left out."""
    tail = f" batch={batch}" if batch > 1 else ""
    if count:
        tail += f" ({count} more {kind}s of this queue since the last record were not logged)"
    return tail
