"""Running an action request: acting on its pending items one by one, in replay order,
paced, and finishing it exactly once (see ``actions`` for the whole contract).

``run`` is what the Celery task, an inline request and the CLI call. It takes the
request's lease first (``web.lease.Lease``: one runner at a time, or two runners would
interleave a key's replays), renews it before every message, and stops when the lease is
lost (another runner took over) or the request was cancelled. Only items still
``pending`` are acted on, and an item takes its outcome only once (a conditional
update), so a task delivered twice or a resumed request never acts on an item twice.
"""

from __future__ import annotations

import logging
import time

import redis
from django.conf import settings
from django.db import transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from lockstep.dashboard.deadletters import progress
from lockstep.dashboard.deadletters.models import (
    ActionItem,
    ActionKind,
    ActionRequest,
    ActionState,
    AuditEntry,
    DeadLetter,
    Outcome,
    Status,
    StatusChange,
)
from lockstep.dashboard.web.lease import DEFAULT_TTL_MS, Lease
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.workers.dead_letters import (
    Pace,
    Replayed,
    ReplayOutcome,
    Target,
    discard,
    in_replay_order,
    replay_many,
)
from lockstep.workers.refs import QueueRef

log = logging.getLogger(__name__)

# Progress pushes while a request runs: often enough for a smooth progress bar, rarely
# enough that counting the outcomes of a 100,000-item request is not done per message.
PUSH_INTERVAL_S = 0.25


def rate_per_second() -> float:
    return float(settings.LOCKSTEP_REPLAY_RATE_PER_S)


def run(request_id: str, *, per_second: float | None = None) -> ActionRequest | None:
    """Act on the request's pending items, in replay order, at most ``per_second`` a
    second (default: the setting), until done or cancelled; then finish it. Returns the
    request as stored after (``None`` when unknown). Does nothing for a finished request,
    or while another runner holds the request's lease."""
    request = ActionRequest.objects.filter(request_id=request_id).first()
    if request is None or request.finished_at is not None:
        return request
    rate = rate_per_second() if per_second is None else per_second
    client = get_redis()
    try:
        lease = Lease.take(client, request_id, ttl_ms=_lease_ttl_ms(rate))
    except redis.RedisError as exc:
        finish(request, f"not attempted: Redis is unavailable ({exc})")
        return fresh(request)
    if lease is None:
        return request
    try:
        _Runner(client, request, lease, rate).run()
    finally:
        lease.release()
    return fresh(request)


def _lease_ttl_ms(per_second: float) -> int:
    # The lease is renewed before each message: it must outlive the pause between two.
    pause_ms = int(3000 / per_second) if per_second > 0 else 0
    return max(DEFAULT_TTL_MS, pause_ms)


def fresh(request: ActionRequest) -> ActionRequest:
    request.refresh_from_db()
    return request


def _pending_items(request: ActionRequest) -> dict[Target, ActionItem]:
    """The request's pending items by their target (records without their bodies, which
    may be up to LOCKSTEP_MAX_BODY_BYTES each)."""
    items = (
        ActionItem.objects.filter(request=request, outcome=Outcome.PENDING)
        .select_related("record")
        .only(
            "outcome",
            "record",
            "record__topic",
            "record__queue",
            "record__group",
            "record__dlq_id",
            "record__offset",
        )
    )
    return {
        Target(
            QueueRef(i.record.topic, i.record.queue),
            i.record.group,
            i.record.dlq_id,
            i.record.offset,
        ): i
        for i in items
    }


class _Runner:
    """One pass over a request's pending items (``run`` holds the lease)."""

    def __init__(
        self, client: redis.Redis, request: ActionRequest, lease: Lease, per_second: float
    ) -> None:
        self.client = client
        self.request = request
        self.lease = lease
        self.per_second = per_second
        by_target = _pending_items(request)
        self.order = in_replay_order(by_target)
        self.items = by_target
        self.reported = 0  # items with an outcome so far (in ``order``)
        self.attempting: Target | None = None  # the item being acted on, if any
        self.lease_lost = False
        self.last_push = 0.0

    def run(self) -> None:
        ActionRequest.objects.filter(pk=self.request.pk, state=ActionState.PENDING).update(
            state=ActionState.RUNNING
        )
        self._push(force=True)
        try:
            if self.request.action == ActionKind.REPLAY:
                self._replay()
            else:
                self._discard()
        except redis.RedisError as exc:
            log.warning("action request %s stopped: %s", self.request.request_id, exc)
            if self.attempting is not None:
                self._failed(self.attempting, exc)
            finish(self.request, f"not attempted: Redis failed during the request ({exc})")
            return
        if self.lease_lost:
            return  # another runner took over the request; it finishes it
        finish(self.request, "cancelled before it ran")

    def stop(self) -> bool:
        """Checked before each message: the lease is renewed (lost: stop, another runner
        has it) and a cancel is looked for."""
        if not self.lease.renew():
            self.lease_lost = True
            return True
        if ActionRequest.objects.filter(pk=self.request.pk, state=ActionState.CANCELLED).exists():
            return True
        self.attempting = self.order[self.reported]
        return False

    def _replay(self) -> None:
        replay_many(
            self.client,
            self.order,
            replay_id=self.request.request_id,
            actor=self.request.actor,
            per_second=self.per_second,
            cancelled=self.stop,
            on_outcome=self._replayed,
        )

    def _replayed(self, target: Target, result: Replayed) -> None:
        if result.outcome is ReplayOutcome.IN_PLACE:
            self._report(
                target,
                Outcome.IN_PLACE,
                "replayed in place: it runs before its key's parked messages",
                Status.REPLAYED,
                "replayed (in place)",
            )
        elif result.outcome is ReplayOutcome.REPUBLISHED:
            self._report(
                target,
                Outcome.REPUBLISHED,
                f"re-published at offset {result.offset}",
                Status.REPLAYED,
                f"replayed (re-published at offset {result.offset})",
            )
        else:
            self._report(
                target,
                Outcome.MISSING,
                "no longer a dead letter in Redis (replayed or discarded elsewhere): nothing done",
                Status.DEAD,
                "not replayed: no longer a dead letter in Redis; the runtime's report decides",
            )

    def _discard(self) -> None:
        pace = Pace(self.per_second)
        reason = self.request.reason
        for target in self.order:
            if self.stop():
                return
            pace.wait()
            item = self.items[target]
            now = (
                DeadLetter.objects.filter(pk=item.record_id)
                .values_list("status", flat=True)
                .first()
            )
            if now != Status.DEAD:
                self._report(target, Outcome.SKIPPED, f"now {now}: not discarded")
                continue
            done = discard(
                self.client,
                target.ref,
                target.group,
                target.dlq_id,
                actor=self.request.actor,
                reason=reason,
            )
            if done:
                self._report(
                    target, Outcome.DISCARDED, reason, Status.DISCARDED, f"discarded: {reason}"
                )
            else:
                self._report(
                    target,
                    Outcome.MISSING,
                    "no longer a dead letter in Redis (replayed or discarded elsewhere): "
                    "nothing done",
                )

    def _failed(self, target: Target, exc: Exception) -> None:
        back = Status.DEAD if self.request.action == ActionKind.REPLAY else ""
        self._report(target, Outcome.FAILED, f"Redis failed: {exc}", back, f"failed: {exc}")

    def _report(
        self, target: Target, outcome: str, detail: str, status: str = "", note: str = ""
    ) -> None:
        """Store one item's outcome (once: only a pending item takes it), count it done,
        and move its record to ``status`` (when given and allowed)."""
        item = self.items[target]
        with transaction.atomic():
            stored = ActionItem.objects.filter(pk=item.pk, outcome=Outcome.PENDING).update(
                outcome=outcome, detail=detail, at=timezone.now()
            )
            if stored:
                ActionRequest.objects.filter(pk=self.request.pk).update(done=F("done") + 1)
                if status:
                    item.record.move_to(
                        status,
                        actor=self.request.actor,
                        request_id=self.request.request_id,
                        note=note,
                    )
        self.reported += 1
        self.attempting = None
        self._push()

    def _push(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last_push >= PUSH_INTERVAL_S:
            self.last_push = now
            progress.publish(self.request.request_id)


# ---- finishing ------------------------------------------------------------------------


def finish(request: ActionRequest, skipped_detail: str) -> bool:
    """End the request (once): items still pending become ``skipped`` with
    ``skipped_detail`` and their records go back ``replay_pending`` → ``dead``; state
    ``cancelled`` if a cancel came, else ``done``; ``finished_at``; the audit entry.
    Returns whether this call finished it (False: it was finished already)."""
    now = timezone.now()
    pending = ActionItem.objects.filter(request=request, outcome=Outcome.PENDING)
    with transaction.atomic():
        record_pks = list(pending.values_list("record_id", flat=True))
        pending.update(outcome=Outcome.SKIPPED, detail=skipped_detail, at=now)
        if request.action == ActionKind.REPLAY and record_pks:
            move_many(
                record_pks,
                Status.REPLAY_PENDING,
                Status.DEAD,
                actor=request.actor,
                request_id=request.request_id,
                note=f"not replayed: {skipped_detail}",
            )
        finished = ActionRequest.objects.filter(pk=request.pk, finished_at__isnull=True).update(
            state=Case(
                When(state=ActionState.CANCELLED, then=Value(ActionState.CANCELLED)),
                default=Value(ActionState.DONE),
            ),
            finished_at=now,
            done=F("total"),
        )
        if finished:
            request.refresh_from_db()
            _audit(request)
    progress.publish(request.request_id)
    return bool(finished)


def _audit(request: ActionRequest) -> None:
    outcomes = progress.outcome_counts(request)
    AuditEntry.objects.create(
        at=request.finished_at or timezone.now(),
        actor=request.actor,
        action=request.action,
        request_id=request.request_id,
        group=request.group,
        filter=request.filter,
        selection=request.selection,
        reason=request.reason,
        count=request.total,
        outcomes=outcomes,
    )


def move_many(
    pks: list[int], from_status: str, to_status: str, *, actor: str, request_id: str, note: str
) -> set[int]:
    """``DeadLetter.move_to`` for many records in one transaction: each moves only if it
    is still in ``from_status`` (a conditional update per record, so of two requests
    racing for a record one wins), with a ``StatusChange`` for each that moved. Returns
    the pks that moved."""
    now = timezone.now()
    moved: set[int] = set()
    with transaction.atomic():
        for pk in pks:
            if DeadLetter.objects.filter(pk=pk, status=from_status).update(
                status=to_status, updated_at=now
            ):
                moved.add(pk)
        StatusChange.objects.bulk_create(
            StatusChange(
                record_id=pk,
                status=to_status,
                at=now,
                actor=actor[:150],
                request_id=request_id[:64],
                note=note,
            )
            for pk in pks
            if pk in moved
        )
    return moved
