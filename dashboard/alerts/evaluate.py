"""The evaluator: every ``LOCKSTEP_ALERT_EVAL_SECONDS`` it reads the live state once, runs
every rule over it and applies the lifecycle; the dispatcher (a thread beside it) sends
the notifications the lifecycle queued.

One evaluator acts at a time: it holds a lease in Redis (renewed every tick); a second
``alerts run`` waits as a standby and takes over within the lease's time to live when the
first stops. Redis or database trouble skips a tick (one warning when it starts, one when
it ends; a Redis outage is told by ``workers.outage``) and never resolves an alert: only
a completed reading can say a condition cleared.
"""

from __future__ import annotations

import logging
import threading
import time

import redis
from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from lockstep.dashboard.alerts import lifecycle, push
from lockstep.dashboard.alerts.live import LiveState, Tracker
from lockstep.dashboard.alerts.models import Alert
from lockstep.dashboard.alerts.rules import RULES, Finding, Resolution, Rule
from lockstep.dashboard.alerts.thresholds import Thresholds
from lockstep.dashboard.web.lease import Lease
from lockstep.workers.outage import REDIS_DOWN, redis_outage

log = logging.getLogger(__name__)

LEASE_PREFIX = "lockstep-web:lease:"
LEASE_NAME = "alerts-evaluator"


class Evaluator:
    """Runs the rules; ``tick`` is one evaluation (what tests call directly)."""

    def __init__(self, client: redis.Redis, rules: dict[str, Rule] | None = None) -> None:
        self.client = client
        self.rules = RULES if rules is None else rules
        self.tracker = Tracker()

    def tick(self) -> lifecycle.Changes:
        """Read, evaluate, apply; Redis and database errors propagate (nothing applied)."""
        live = LiveState.read(self.client, self.tracker)
        thresholds = Thresholds.load()
        findings: list[Finding] = []
        evaluated: set[str] = set()
        for rule in self.rules.values():
            try:
                findings += rule.evaluate(live, thresholds)
            except (redis.RedisError, DatabaseError):
                raise
            except Exception:  # a broken rule must not silence the others
                log.exception("alert rule %s failed; its alerts stay as they are", rule.name)
                continue
            evaluated.add(rule.name)
        self.tracker.end_tick()
        changes = lifecycle.apply(
            findings, evaluated, timezone.now(), lambda alert: self._final(alert, live)
        )
        if changes.opened or changes.resolved or changes.told:
            # One toast per group notification, when it is told (after its group wait),
            # not per alert opened: the badge's counts follow every opening at once.
            toasts = [a for n in changes.told if n.event == "opened" for a in n.firing]
            push.publish(toasts, changes.resolved)
        return changes

    def _final(self, alert: Alert, live: LiveState) -> Resolution:
        """The resolving ``alert``'s final state, as its rule tells it; a rule that fails
        to tell (or is unknown) leaves the default."""
        rule = self.rules.get(alert.rule)
        if rule is None:
            return Resolution("the condition cleared")
        try:
            return rule.resolution(alert, live)
        except (redis.RedisError, DatabaseError):
            raise
        except Exception:  # a broken rule must not keep an alert from resolving
            log.exception("alert rule %s could not tell a final state", rule.name)
            return Resolution("the condition cleared")


def interval_s() -> float:
    return float(settings.LOCKSTEP_ALERT_EVAL_SECONDS)


# After a tick that took longer than the interval, the evaluator rests this many times
# as long (docs/alerts.md, detection delay).
REST_PER_TICK = 2.0


def next_wait(interval: float, took: float) -> float:
    """Seconds to wait after a tick that took ``took``: the rest of ``interval`` (ticks
    start every interval); after a tick that overran it, ``REST_PER_TICK`` times ``took``. A
    tick of a large fleet (seconds at 16,384 (queue, group) pairs on a loaded machine)
    would otherwise run back to back and take a core that pages and pushes need; alerts
    whose thresholds are tens of seconds are told a few seconds later."""
    return interval - took if took < interval else REST_PER_TICK * took


def run(client: redis.Redis, stop: threading.Event) -> None:
    """Evaluate until ``stop`` is set, holding the evaluator lease. A Redis outage is told
    by the process's ``redis_outage`` (one warning when it starts, one when it ends); a
    database outage, or a Redis error that is no outage (a bug, with its traceback), by
    one warning when it starts and one when evaluation works again."""
    evaluator = Evaluator(client)
    ttl_ms = int(max(10.0, 3 * interval_s()) * 1000)
    lease: Lease | None = None
    trouble = False
    standby_logged = False
    while not stop.is_set():
        started = time.monotonic()
        try:
            renewed = lease is not None and lease.renew()
            if not renewed:
                lease = Lease.take(client, LEASE_NAME, ttl_ms, prefix=LEASE_PREFIX)
            redis_outage.ok(started)  # the lease's call answered
            if lease is None:
                if not standby_logged:
                    log.warning("another alert evaluator is active; standing by")
                    standby_logged = True
                stop.wait(interval_s())
                continue
            if not renewed:
                log.info("alert evaluator active (every %.1f s)", interval_s())
                standby_logged = False
            evaluator.tick()
            if trouble:
                log.warning("alert evaluation works again")
                trouble = False
        except REDIS_DOWN as exc:
            redis_outage.failed(exc, "the alert evaluator")
        except (redis.RedisError, DatabaseError) as exc:
            if not trouble:
                log.warning(
                    "alert evaluation skipped until this is resolved: %s",
                    exc,
                    exc_info=isinstance(exc, redis.RedisError),
                )
                trouble = True
        stop.wait(next_wait(interval_s(), time.monotonic() - started))
    if lease is not None:
        lease.release()  # nothing when Redis is down: the lease then expires by itself
