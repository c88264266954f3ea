"""The action service: an operator's replay or discard of dead letters, from submission
to the audit entry. The API, the pages and ``manage.py dlq`` all go through it.

Contract:

- **Idempotent.** ``submit`` is keyed by the client's ``request_id``: the same id again
  (a double click, a network retry, a CLI re-run) returns the first request and does
  nothing more; the same id with another action or group is refused
  (``RequestIdReused``). Redis is idempotent underneath (a dead letter already handled
  reports ``missing``), so even a message tried twice is replayed once.
- **What it acts on.** Records in status ``dead`` (``plans.ACTIONABLE``); the rest of
  the selection is skipped. One ``ActionItem`` per record, created in replay order
  (``workers.dead_letters.in_replay_order``: per queue by original offset, so each key's
  messages go back in their original order). A replay *claims* its records (``dead`` →
  ``replay_pending``, conditionally: a record another request claimed first is skipped);
  a discard acts on a record only while it is still ``dead``.
- **Where it runs.** Up to ``INLINE_MAX`` messages inside ``submit`` (a single replay
  answers with its outcome); more in the Celery task ``tasks.run_action``; the CLI
  always inline. Either way ``runner.run`` does it, paced at ``LOCKSTEP_REPLAY_RATE_PER_S``, one
  runner per request at a time (``web.lease.Lease``), only items still pending, so a task
  delivered twice or a resumed request never acts on an item twice.
- **Outcomes.** Per item: ``in_place`` / ``republished`` (record ``replayed``),
  ``discarded`` (record ``discarded``, the reason in its history), ``missing`` (no longer
  a dead letter in Redis: nothing done; a claimed record goes back to ``dead`` and the
  runtime's events move it on), ``failed`` (Redis failed during the call: the record goes
  back to ``dead``; the event, if the call did act, moves it on), ``skipped`` (not done).
- **Cancel.** ``cancel`` marks the request ``cancelled``; the runner checks before each
  message and stops. Items not done are ``skipped`` and their records go back to ``dead``.
- **Finish.** Exactly once per request (a conditional update on ``finished_at``): state
  ``done`` or ``cancelled``, ``finished_at``, and one ``AuditEntry`` with the actor, the
  filter or selection, the reason, the count and the outcome counts. A cancel is an
  operator action of its own and gets its own entry (``cancel_replay`` /
  ``cancel_discard``).
- **Progress.** Pushed to the request's channel group (``progress.publish``) when it
  starts, at most every ``runner.PUSH_INTERVAL_S`` while it runs, and when it finishes.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import redis
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from kombu.exceptions import OperationalError

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
)
from lockstep.dashboard.deadletters.plans import ACTIONABLE, ActionRefused, Selection, plan
from lockstep.dashboard.deadletters.runner import finish, fresh, move_many, run
from lockstep.dashboard.deadletters.tasks import run_action
from lockstep.dashboard.web.lease import Lease
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.views import Conflict
from lockstep.workers.dead_letters import Target, in_replay_order
from lockstep.workers.refs import QueueRef

__all__ = ("RequestIdReused", "Submitted", "cancel", "finish", "plan", "run", "submit")

log = logging.getLogger(__name__)

REQUEST_ID = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
# A request this small runs inside the call that submits it, so replaying one message
# (or a handful picked on the page) answers with the outcome; at the default rate it
# takes at most 0.2 s. Anything larger goes to Celery.
INLINE_MAX = 10
REASON_MAX_LENGTH = 2000


class RequestIdReused(ActionRefused, Conflict):
    """A request id already used for another action or group (the API answers 409)."""


@dataclass(frozen=True)
class Submitted:
    request: ActionRequest
    created: bool  # False: the request id existed; nothing was done


def check_request_id(request_id: str) -> str:
    if not isinstance(request_id, str) or not REQUEST_ID.match(request_id):
        raise ActionRefused("request_id must be 8 to 64 characters of A-Z, a-z, 0-9, '_', '-'")
    return request_id


def check_action(action: str) -> str:
    if action not in ActionKind.values:
        raise ActionRefused(f"action must be one of: {', '.join(ActionKind.values)}")
    return action


def check_reason(action: str, reason: str) -> str:
    """The reason, trimmed; a discard needs one."""
    reason = (reason or "").strip()
    if len(reason) > REASON_MAX_LENGTH:
        raise ActionRefused(f"reason is longer than {REASON_MAX_LENGTH} characters")
    if action == ActionKind.DISCARD and not reason:
        raise ActionRefused("a discard needs a reason")
    return reason


def existing_request(request_id: str, action: str, group: str) -> ActionRequest | None:
    """The request already submitted under ``request_id``, if any; ``RequestIdReused``
    when it was for another action or group."""
    request = ActionRequest.objects.filter(request_id=request_id).first()
    if request is not None and (request.action, request.group) != (action, group):
        raise RequestIdReused(
            f"request_id {request_id} was already used for a {request.action} in group "
            f"{request.group!r}; make a new one"
        )
    return request


def submit(
    actor: str,
    group: str,
    action: str,
    request_id: str,
    selection: Selection,
    reason: str = "",
    *,
    inline: bool | None = None,
) -> Submitted:
    """Submit (and start) ``action`` on the ``dead`` records of ``selection``.

    Idempotent on ``request_id`` (see the module docstring). ``ActionRefused`` for a bad
    request id, action or reason, unknown ids, or nothing to act on (nothing is stored
    then). ``inline``: run before returning (the CLI); ``None`` decides by size
    (``INLINE_MAX``). Redis errors of an inline run end up as outcomes, not exceptions."""
    check_request_id(request_id)
    check_action(action)
    found = existing_request(request_id, action, group)
    if found is not None:
        return Submitted(found, created=False)
    reason = check_reason(action, reason)
    selection.check(group)
    targets = _targets(selection.records(group).filter(status=ACTIONABLE))
    if not targets:
        raise ActionRefused(plan(get_redis(), group, action, selection).nothing_to_do())
    with transaction.atomic():
        request, created = ActionRequest.objects.get_or_create(
            request_id=request_id,
            defaults={
                "action": action,
                "actor": actor[:150],
                "group": group,
                "filter": selection.filter_params,
                "selection": list(selection.ids),
                "reason": reason,
            },
        )
        if not created:  # submitted concurrently under the same id: that one stands
            return Submitted(existing_request(request_id, action, group) or request, False)
        _add_items(request, targets)
        run_inline = request.total <= INLINE_MAX if inline is None else inline
        if not run_inline:
            transaction.on_commit(lambda: dispatch(request_id))
    if run_inline:
        run(request_id)
    request.refresh_from_db()
    return Submitted(request, created=True)


@dataclass(frozen=True)
class _Row:
    pk: int
    target: Target


def _targets(records: QuerySet[DeadLetter]) -> list[_Row]:
    """The records as replay targets, in replay order."""
    rows = [
        _Row(pk, Target(QueueRef(topic, queue), group, dlq_id, offset))
        for pk, topic, queue, group, dlq_id, offset in records.values_list(
            "pk", "topic", "queue", "group", "dlq_id", "offset"
        )
    ]
    by_target = {row.target: row for row in rows}
    return [by_target[t] for t in in_replay_order(by_target)]


def _add_items(request: ActionRequest, rows: list[_Row]) -> None:
    """One item per row, in replay order; a replay claims each record (``dead`` →
    ``replay_pending``) and marks the ones another request claimed first as skipped."""
    if request.action == ActionKind.REPLAY:
        claimed = move_many(
            [r.pk for r in rows],
            Status.DEAD,
            Status.REPLAY_PENDING,
            actor=request.actor,
            request_id=request.request_id,
            note="replay requested",
        )
    else:
        claimed = {r.pk for r in rows}
    now = timezone.now()
    ActionItem.objects.bulk_create(
        ActionItem(request=request, record_id=r.pk)
        if r.pk in claimed
        else ActionItem(
            request=request,
            record_id=r.pk,
            outcome=Outcome.SKIPPED,
            detail="another request took it first",
            at=now,
        )
        for r in rows
    )
    request.total = len(rows)
    request.done = len(rows) - len(claimed)
    request.save(update_fields=["total", "done"])


def dispatch(request_id: str) -> None:
    """Queue the Celery task that runs the request. When the broker cannot be reached the
    request is finished at once, every item skipped with the reason: nothing is left
    waiting for a task that will never come."""
    try:
        run_action.delay(request_id)
    except (OperationalError, redis.RedisError, OSError) as exc:
        log.error("could not queue action request %s: %s", request_id, exc)
        request = ActionRequest.objects.get(request_id=request_id)
        finish(request, f"not started: the task queue is unavailable ({exc})")


# ---- cancelling ------------------------------------------------------------------------


def cancel(request_id: str, actor: str) -> ActionRequest | None:
    """Ask the request to stop (``None`` when unknown). A finished request is returned as
    it is: nothing changes. Otherwise it becomes ``cancelled`` at once and its runner
    stops before its next message; a request no runner holds (still queued, or its
    runner died) is finished here."""
    request = ActionRequest.objects.filter(request_id=request_id).first()
    if request is None:
        return None
    asked = ActionRequest.objects.filter(
        pk=request.pk, state__in=(ActionState.PENDING, ActionState.RUNNING)
    ).update(state=ActionState.CANCELLED)
    if not asked:
        return request
    AuditEntry.objects.create(
        actor=actor[:150],
        action=f"cancel_{request.action}",
        request_id=request.request_id,
        group=request.group,
        filter=request.filter,
        selection=request.selection,
        count=ActionItem.objects.filter(request=request, outcome=Outcome.PENDING).count(),
    )
    _finish_unless_running(request)
    return fresh(request)


def _finish_unless_running(request: ActionRequest) -> None:
    try:
        lease = Lease.take(get_redis(), request.request_id)
    except redis.RedisError:
        lease = None  # no runner can act without Redis either: finish it
    if lease is None and _redis_up():
        progress.publish(request.request_id)  # its runner finishes it
        return
    try:
        finish(request, "cancelled before it ran")
    finally:
        if lease is not None:
            lease.release()


def _redis_up() -> bool:
    try:
        return bool(get_redis().ping())
    except redis.RedisError:
        return False
