"""Demo handlers for topic ``orders``.

``handle_order`` (group ``mailer``, queue ordering) checks each order's lifecycle arrives
in order and fails a few percent of calls so retries show on the dashboard.
``handle_billing`` (group ``billing``, key ordering, a finite ``max_reconsume_times`` and
``after_dlq = hold``) fails every call for *poison* orders (every
``LOCKSTEP_DEMO_POISON_EVERY``-th order id) until an operator fixes the handler
(``python manage.py demo_poison fix``, or the switch on the dead-letter page): a new user
sees dead letters, held keys and parked messages within minutes, and can replay them.

Both fail on purpose with ``HandlerFailure``: the worker's log shows each failure as one
line (docs/api.md §10), not a traceback that points at the ``raise`` below.
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from collections.abc import Sequence
from functools import cache

import redis

from lockstep.workers.connection import connect
from lockstep.workers.env import env_int
from lockstep.workers.errors import HandlerFailure
from lockstep.workers.message import ConsumeContext, ConsumeStatus, Message

log = logging.getLogger(__name__)

STEPS = ("created", "paid", "shipped", "completed")
FAILURE_RATE = 0.03  # a few percent of handler calls fail, as the demo promises
_last_step: dict[str, int] = {}


def handle_order(messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
    if random.random() < FAILURE_RATE:
        ctx.set_suspend_ms(200)
        raise HandlerFailure("demo: mail server timed out")
    for m in messages:
        step = json.loads(m.body).get("step", "")
        index = STEPS.index(step) if step in STEPS else -1
        previous = _last_step.get(m.key, -1)
        if index not in (previous + 1, previous, 0):
            log.warning("demo: order %s went from %s to %s", m.key, previous, index)
        _last_step[m.key] = index
    time.sleep(random.uniform(0.001, 0.004))
    return ConsumeStatus.SUCCESS


# While this Redis key exists the billing handler is "fixed": poison orders succeed.
FIXED_FLAG = "ls:demo:billing-fixed"


def poison_every() -> int:
    """Every n-th order id is poison for the billing handler (0: none)."""
    return env_int("LOCKSTEP_DEMO_POISON_EVERY", 100, minimum=0)


def is_poison(key: str, every: int) -> bool:
    number = key.rpartition("-")[2]
    return every > 0 and number.isdigit() and int(number) % every == 0


@cache
def _redis(url: str) -> redis.Redis:
    return connect(url)


def billing_fixed() -> bool:
    return bool(_redis(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")).exists(FIXED_FLAG))


def handle_billing(messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
    every = poison_every()
    for m in messages:
        if is_poison(m.key, every) and not billing_fixed():
            raise HandlerFailure(f"demo: card declined for {m.key} (a poison order)")
    time.sleep(random.uniform(0.001, 0.004))
    return ConsumeStatus.SUCCESS
