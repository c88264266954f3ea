"""One queue's consume loop (RocketMQ's ``ConsumeMessageOrderlyService.ConsumeRequest``
together with the queue's ``ProcessQueue``).

Contract:
- At most one thread runs a queue's loop in a process (the thread *is* the queue's
  ``MessageQueueLock``); ``consume_lock`` is held exactly while the handler runs and its
  result is processed, so a release never happens in the middle of a message.
- The loop starts from the offset stored in Redis, never from local memory.
- The handler is invoked only while the lock is valid on the client side (renewed within
  ``client_lock_expiry``). Every commit and dead-letter move is fenced by the token.
- Committed offset = the smallest offset not yet done (handled or dead-lettered).
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import redis

from workers import events as ev
from workers.broker import Broker, CommitResult, dead_letter_entry
from workers.config import UNBOUNDED, Subscription, Timings
from workers.events import EventLog
from workers.lanes import LanePool
from workers.message import (
    ConsumeContext,
    ConsumeStatus,
    Handler,
    MalformedEntry,
    Message,
    decode_entry,
)

log = logging.getLogger(__name__)

PREFETCH = 64  # entries read per round trip; bounded so a dropped queue frees memory fast


@dataclass
class WorkerEnv:
    """What every queue worker of one subscription shares."""

    sub: Subscription
    broker: Broker
    events: EventLog
    timings: Timings
    consumer_id: str
    handler: Handler
    offset_group: str  # group for clustering; a per-consumer name for broadcasting
    lanes: LanePool | None = None  # key ordering only


Item = Message | MalformedEntry


class QueueWorker:
    def __init__(self, env: WorkerEnv, queue: int, token: int | None) -> None:
        self.env = env
        self.queue = queue
        self.token = token
        self.last_locked = time.monotonic()
        self.consume_lock = threading.Lock()
        self.buffer: deque[Item] = deque()
        self.next_fetch = 0
        self.paused_until = 0.0
        self.state = "starting"
        self.last_error = ""
        self.stop_reason = ""
        self._dropped = threading.Event()
        self._release_lock = True
        self._thread = threading.Thread(
            target=self._run, name=f"lockstep-{env.sub.topic}-{queue}", daemon=True
        )

    # -- control (called from the rebalance thread) ----------------------------------
    def start(self) -> None:
        self._thread.start()

    def drop(self, reason: str, *, release_lock: bool = True) -> None:
        """Ask the loop to stop after the batch in progress; it commits, then (when
        ``release_lock``) unlocks the queue on the broker."""
        if not self._dropped.is_set():
            self.stop_reason = reason
            self._release_lock = release_lock
            self._dropped.set()

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def dropped(self) -> bool:
        return self._dropped.is_set()

    @property
    def releasing(self) -> bool:
        """Dropped to be handed over (not lost): still finishing its message, after which
        it unlocks. Its lock must be kept alive until then."""
        return (
            self.token is not None and self._dropped.is_set() and self._release_lock and self.alive
        )

    def snapshot(self) -> dict[str, object]:
        """What the dashboard shows of this queue's consumption (refreshed with the
        consumer's card every heartbeat): state, retries of the head message, last error."""
        out: dict[str, object] = {
            "state": self.state,
            "token": self.token,
            "last_error": self.last_error,
        }
        head = self.buffer[0] if self.buffer else None
        out["retries"] = head.reconsume_times if isinstance(head, Message) else 0
        out["head_offset"] = head.offset if head is not None else self.next_fetch
        key_state = getattr(self, "key_state", None)
        if callable(key_state):
            ks = key_state()
            out.update(ks)
            if ks.get("flow_paused"):
                out["state"] = "paused"
            elif ks.get("blocked_count"):
                out["state"] = "blocked"
        return out

    def renewed(self, at: float) -> None:
        self.last_locked = at

    def lock_valid(self) -> bool:
        if self.token is None:  # broadcasting: no locks
            return True
        return time.monotonic() - self.last_locked < self.env.timings.client_lock_expiry

    # -- the loop ------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self.next_fetch = self.env.broker.read_offset(
                self.env.sub.topic, self.env.offset_group, self.queue
            ).committed
            self._loop()
        except Exception:
            log.exception("queue %s/%s loop crashed", self.env.sub.topic, self.queue)
            self._emit(ev.HANDLER_ERROR, details={"error": traceback.format_exc()[-2000:]})
        finally:
            self._finish()

    def _loop(self) -> None:
        t = self.env.timings
        streak_start = time.monotonic()
        while not self._dropped.is_set():
            now = time.monotonic()
            if not self.lock_valid():
                self.state = "lock_expired"
                self._dropped.wait(0.05)
                continue
            if self.paused_until > now:
                self.state = "suspended"
                self._dropped.wait(min(self.paused_until - now, 0.1))
                continue
            if not self.buffer and not self._fill(t.poll_block):
                self.state = "idle"
                streak_start = time.monotonic()
                continue
            self.state = "consuming"
            self._consume_head()
            if time.monotonic() - streak_start > t.max_continuous:
                # RocketMQ yields a queue consumed continuously for 60 s so others run.
                time.sleep(t.continuous_yield)
                streak_start = time.monotonic()

    def _fill(self, block_s: float) -> bool:
        sub = self.env.sub
        entries = self.env.broker.read_from(
            sub.topic, self.queue, self.next_fetch, PREFETCH, block_s=block_s
        )
        for entry_id, fields in entries:
            try:
                item: Item = decode_entry(sub.topic, self.queue, entry_id, fields)
            except MalformedEntry as bad:
                item = bad
            except ValueError:
                continue  # an entry ID that is not ours cannot be placed in the order
            if item.offset < self.next_fetch:
                continue
            self.buffer.append(item)
            self.next_fetch = item.offset + 1
        return bool(self.buffer)

    def _commit_point(self) -> int:
        return self.buffer[0].offset if self.buffer else self.next_fetch

    def _take_batch(self) -> list[Message]:
        batch: list[Message] = []
        for item in self.buffer:
            if isinstance(item, MalformedEntry) or len(batch) >= self.env.sub.batch_size:
                break
            batch.append(item)
        return batch

    def _consume_head(self) -> None:
        head = self.buffer[0]
        with self.consume_lock:
            if self._dropped.is_set() or not self.lock_valid():
                return
            if isinstance(head, MalformedEntry):
                self._dead_letter_malformed(head)
                return
            batch = self._take_batch()
            status, error = self._invoke(batch)
            if status is ConsumeStatus.SUCCESS:
                self._on_success(batch)
            else:
                self._on_suspend(batch, error)

    def _invoke(self, batch: list[Message]) -> tuple[ConsumeStatus, str]:
        env = self.env
        ctx = ConsumeContext(
            env.sub.topic,
            env.sub.group,
            self.queue,
            env.consumer_id,
            self.token or 0,
            env.sub.suspend_ms,
        )
        started = time.monotonic()
        try:
            result = env.handler(batch, ctx)
        except Exception as exc:
            status, error = ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT, _describe(exc)
        else:
            status, error = _status_of(result)
        self._pending_suspend = ctx.suspend_seconds
        if self.token is not None and not self.lock_valid():
            self._emit(
                ev.LOCK_MARGIN_OVERRUN,
                details={
                    "offsets": [batch[0].offset, batch[-1].offset],
                    "handler_seconds": round(time.monotonic() - started, 3),
                    "client_lock_expiry": env.timings.client_lock_expiry,
                },
            )
        return status, error

    def _on_success(self, batch: list[Message]) -> None:
        self.last_error = ""
        for _ in batch:
            self.buffer.popleft()
        self._commit(batch[-1].offset + 1)

    def _on_suspend(self, batch: list[Message], error: str) -> None:
        limit = self.env.sub.max_reconsume_times
        doomed = [m for m in batch if limit != UNBOUNDED and m.reconsume_times >= limit]
        retry = [m for m in batch if m not in doomed]
        for m in retry:
            m.reconsume_times += 1
        for m in doomed:
            if not self._dead_letter(m, error):
                return
        if not retry:
            return
        self.paused_until = time.monotonic() + self._pending_suspend
        self.last_error = error
        head = retry[0]
        self._emit(
            ev.CONSUME_FAILED,
            key=head.key,
            details={
                "offsets": [m.offset for m in retry],
                "reconsume_times": head.reconsume_times,
                "max_reconsume_times": limit,
                "suspend_ms": int(self._pending_suspend * 1000),
                "error": error,
            },
        )

    def _dead_letter(self, message: Message, error: str) -> bool:
        self.buffer.remove(message)
        result = self.env.broker.dead_letter(
            self.env.sub.topic,
            self.env.sub.group,
            self.queue,
            self.env.consumer_id,
            self.token,
            self._commit_point(),
            dead_letter_entry(message, self.env.sub.group, error),
            offset_group=self.env.offset_group,
        )
        if not self._accept(result, self._commit_point()):
            return False
        self._emit(
            ev.DEAD_LETTERED,
            key=message.key,
            details={
                "offset": message.offset,
                "reconsume_times": message.reconsume_times,
                "error": error,
                "dlq_id": result.dlq_id,
                "committed": self._commit_point(),
            },
        )
        return True

    def _dead_letter_malformed(self, bad: MalformedEntry) -> None:
        self.buffer.popleft()
        entry = {
            "topic": self.env.sub.topic,
            "queue": self.queue,
            "offset": bad.offset,
            "key": bad.raw.get(b"k", b"").decode("utf-8", "replace"),
            "body": bad.raw.get(b"b", b""),
            "headers": "{}",
            "produced_at_ms": 0,
            "reconsume_times": 0,
            "group": self.env.sub.group,
            "error": f"malformed entry: {bad.reason}",
        }
        result = self.env.broker.dead_letter(
            self.env.sub.topic,
            self.env.sub.group,
            self.queue,
            self.env.consumer_id,
            self.token,
            self._commit_point(),
            entry,
            offset_group=self.env.offset_group,
        )
        if self._accept(result, self._commit_point()):
            self._emit(
                ev.MALFORMED_ENTRY,
                details={"offset": bad.offset, "reason": bad.reason, "dlq_id": result.dlq_id},
            )

    def _commit(self, offset: int) -> bool:
        env = self.env
        if self.token is None:
            env.broker.commit_unfenced(env.sub.topic, env.offset_group, self.queue, offset)
            env.events.committed(
                env.sub.topic, env.sub.group, self.queue, None, env.consumer_id, offset
            )
            return True
        result = env.broker.commit(
            env.sub.topic, env.sub.group, self.queue, env.consumer_id, self.token, offset
        )
        return self._accept(result, offset)

    def _accept(self, result: CommitResult, offset: int) -> bool:
        env = self.env
        if result.ok:
            env.events.committed(
                env.sub.topic, env.sub.group, self.queue, self.token, env.consumer_id, offset
            )
            return True
        self._emit(
            ev.FENCING_REJECTED,
            details={
                "offset": offset,
                "current_token": result.current_token,
                "outcome": result.outcome.name.lower(),
            },
        )
        self.drop("fenced", release_lock=False)
        return False

    def _finish(self) -> None:
        self.state = "stopped"
        env = self.env
        if self.token is None or not self._release_lock:
            return
        try:
            released = env.broker.unlock(
                env.sub.topic, env.sub.group, self.queue, env.consumer_id, self.token
            )
        except redis.RedisError:
            # Redis is unreachable: the lock then simply expires after its TTL.
            log.warning("could not unlock %s/%s; it will expire", env.sub.topic, self.queue)
            return
        if released:
            self._emit(
                ev.LOCK_RELEASED,
                details={"reason": self.stop_reason, "committed": self._commit_point()},
            )

    def _emit(self, type_: str, **fields: object) -> None:
        emit: Callable[..., None] = self.env.events.emit
        emit(
            type_,
            topic=self.env.sub.topic,
            group=self.env.sub.group,
            queue=self.queue,
            token=self.token,
            consumer=self.env.consumer_id,
            **fields,
        )

    _pending_suspend: float = 1.0


def _status_of(result: object) -> tuple[ConsumeStatus, str]:
    if result is ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT:
        # A handler asking to suspend raised nothing, but consume_failed events and dead
        # letters still need a reason an operator can read (an empty one reads as a bug).
        return result, f"handler returned {result.value}"
    if isinstance(result, ConsumeStatus):
        return result, ""
    if isinstance(result, str):
        try:
            return ConsumeStatus(result), ""
        except ValueError:
            pass
    return (
        ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT,
        f"handler returned {result!r}, expected a ConsumeStatus",
    )


def _describe(exc: BaseException) -> str:
    lines = traceback.format_exception_only(type(exc), exc)
    return "".join(lines).strip()[:2000]
