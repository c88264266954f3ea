"""Sends queued deliveries (docs/alerts-delivery.md, "Retries").

``lifecycle.notify`` queues one ``Delivery`` per channel (``pending``, due now); the
dispatcher (``run``, a thread of ``manage.py alerts run``) sends the due ones:

- Each attempt first claims its row with a conditional update (status still pending,
  ``attempts`` unchanged); the claim moves ``next_attempt_at`` past a lease, so two
  dispatchers never send a row at the same time, and a row whose dispatcher died while
  sending is tried again once the lease ends.
- Success: ``sent`` with ``delivered_at``. A retryable error before the last attempt:
  still ``pending``, due again after a doubling backoff, with ``last_error``. Otherwise
  ``failed``, and the alert's timeline gets a ``delivery_failed`` event naming the
  channel and the error.
- A delivery whose channel was disabled meanwhile fails with that reason (at its next
  due time) rather than waiting for a channel that may never return; a deleted channel
  takes its deliveries with it (``on_delete=CASCADE``).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection, transaction
from django.utils import timezone

from lockstep.dashboard.alerts import payload
from lockstep.dashboard.alerts.channels import KINDS, DeliveryError
from lockstep.dashboard.alerts.env_channels import sync_env_channels
from lockstep.dashboard.alerts.models import AlertEvent, Channel, Delivery
from lockstep.workers.redact import redact

log = logging.getLogger(__name__)

DELIVERY_FAILED = "delivery_failed"
# Backoff stops doubling here: with many attempts configured, a receiver that is back
# is found within five minutes.
MAX_BACKOFF = timedelta(seconds=300)
# A claimed row is left alone this long: well past any one send (the send timeout, an
# SMTP exchange), so only a dispatcher that died mid-send makes it due again.
MIN_LEASE = timedelta(seconds=60)
# The dispatcher looks for due deliveries this often: notifications leave within half a
# second of the evaluator queueing them, for one indexed query per tick.
POLL_S = 0.5
# After a database error the loop waits this long, doubling up to the cap.
DB_BACKOFF_S, DB_BACKOFF_MAX_S = 1.0, 30.0


def backoff(attempts: int) -> timedelta:
    """The wait after the ``attempts``-th failed attempt: the first retry after
    ``LOCKSTEP_ALERT_RETRY_SECONDS``, doubling each time, at most ``MAX_BACKOFF``."""
    first = float(settings.LOCKSTEP_ALERT_RETRY_SECONDS)
    return min(timedelta(seconds=first * 2 ** max(0, attempts - 1)), MAX_BACKOFF)


def lease() -> timedelta:
    return max(
        MIN_LEASE, timedelta(seconds=4 * float(settings.LOCKSTEP_ALERT_SEND_TIMEOUT_SECONDS))
    )


def send_due(limit: int = 100, now: datetime | None = None) -> int:
    """Attempt up to ``limit`` pending deliveries due at ``now`` (default: the clock at
    each attempt), oldest due first. Returns how many this call attempted (rows another
    dispatcher claimed first are not counted)."""
    due = (
        Delivery.objects.filter(status=Delivery.PENDING, next_attempt_at__lte=now or timezone.now())
        .select_related("channel")
        .order_by("next_attempt_at", "id")[:limit]
    )
    attempted = 0
    for delivery in list(due):
        at = now or timezone.now()
        if claim(delivery, at):
            attempt(delivery, at, last_chance=False)
            attempted += 1
    return attempted


def claim(delivery: Delivery, at: datetime) -> bool:
    """Take ``delivery`` for one attempt (``attempts`` + 1, leased); False when another
    dispatcher took it or it is no longer due."""
    taken = Delivery.objects.filter(
        pk=delivery.pk,
        status=Delivery.PENDING,
        attempts=delivery.attempts,
        next_attempt_at__lte=at,
    ).update(attempts=delivery.attempts + 1, next_attempt_at=at + lease())
    if taken == 1:
        delivery.attempts += 1
    return taken == 1


def attempt(delivery: Delivery, at: datetime, last_chance: bool) -> None:
    """Send a claimed ``delivery`` once and record the outcome; ``last_chance``: no
    retry whatever the error (a channel test)."""
    channel = delivery.channel
    kind = KINDS.get(channel.kind)
    if kind is None:
        fail(delivery, at, f"no channel kind {channel.kind!r} (known: {', '.join(KINDS)})")
        return
    if not channel.enabled and not last_chance:
        fail(delivery, at, f"the channel {channel.name} was disabled before this was sent")
        return
    try:
        kind().send(channel, delivery.payload, delivery.pk)
    except DeliveryError as exc:
        error, retryable = exc.message, exc.retryable
    except Exception as exc:  # a bug or a library's own error: log it, retry like a blip
        log.exception("channel %s raised while sending delivery %s", channel.name, delivery.pk)
        error, retryable = f"{type(exc).__name__}: {exc}", True
    else:
        sent(delivery, at)
        return
    # The error is stored, shown on the alert's timeline and logged: a receiver's error
    # page or a library's message must not carry the channel's secrets along.
    error = redact(error, [channel.secret, settings.EMAIL_HOST_PASSWORD])
    attempts_max = int(settings.LOCKSTEP_ALERT_DELIVERY_ATTEMPTS)
    if retryable and not last_chance and delivery.attempts < attempts_max:
        retry(delivery, at, error)
    else:
        fail(delivery, at, error)


def sent(delivery: Delivery, at: datetime) -> None:
    delivery.status, delivery.delivered_at, delivery.last_error = Delivery.SENT, at, ""
    delivery.save(update_fields=["status", "delivered_at", "last_error"])
    log.info("delivery %s (%s) sent to %s", delivery.pk, delivery.event, delivery.channel.name)


def retry(delivery: Delivery, at: datetime, error: str) -> None:
    delivery.next_attempt_at = at + backoff(delivery.attempts)
    delivery.last_error = error
    delivery.save(update_fields=["next_attempt_at", "last_error"])
    log.warning(
        "delivery %s to %s failed (attempt %s), retrying at %s: %s",
        delivery.pk,
        delivery.channel.name,
        delivery.attempts,
        delivery.next_attempt_at.isoformat(),
        error,
    )


def fail(delivery: Delivery, at: datetime, error: str) -> None:
    """Final failure: ``failed`` and, for an alert, a ``delivery_failed`` timeline event."""
    delivery.status, delivery.last_error = Delivery.FAILED, error
    with transaction.atomic():
        delivery.save(update_fields=["status", "last_error"])
        if delivery.alert_id is not None:
            AlertEvent.objects.create(
                alert_id=delivery.alert_id,
                at=at,
                kind=DELIVERY_FAILED,
                note=f"{delivery.event} to {delivery.channel.name}: {error}",
                details={
                    "delivery": delivery.pk,
                    "channel": delivery.channel.name,
                    "event": delivery.event,
                    "attempts": delivery.attempts,
                    "error": error,
                },
            )
    log.warning(
        "delivery %s to %s failed after %s attempt(s): %s",
        delivery.pk,
        delivery.channel.name,
        delivery.attempts,
        error,
    )


def send_test(channel: Channel) -> Delivery:
    """Send a test notification to ``channel`` now, once, even if it is disabled (so it
    can be tried before it is enabled); returns the ``Delivery``, ``sent`` or ``failed``
    with ``last_error``. It is created already claimed, so a running dispatcher leaves it
    alone."""
    now = timezone.now()
    delivery = Delivery.objects.create(
        alert=None,
        channel=channel,
        event=Delivery.TEST,
        payload=payload.build(None, Delivery.TEST),
        attempts=1,
        next_attempt_at=now + lease(),
    )
    attempt(delivery, now, last_chance=True)
    return delivery


def run(stop: threading.Event) -> None:
    """Mirror the env-declared channels, then send due deliveries every ``POLL_S`` until
    ``stop`` is set. Database errors are logged once per outage and waited out with a
    doubling pause; nothing ends the loop but ``stop``."""
    synced, failing, pause = False, False, POLL_S
    try:
        while not stop.is_set():
            try:
                if not synced:
                    declared = sync_env_channels()
                    synced = True
                    log.info("alert channels from the environment: %d", len(declared))
                send_due()
            except DatabaseError as exc:
                if not failing:
                    log.warning("alert dispatch: database unavailable (%s); retrying", exc)
                failing = True
                pause = min(max(pause * 2, DB_BACKOFF_S), DB_BACKOFF_MAX_S)
                close_old_connections()
            except Exception:  # never die: a stuck dispatcher is worse than a logged bug
                log.exception("alert dispatch: unexpected error; going on")
                pause = DB_BACKOFF_S
            else:
                if failing:
                    log.warning("alert dispatch: database reachable again")
                failing, pause = False, POLL_S
            stop.wait(pause)
    finally:
        connection.close()
