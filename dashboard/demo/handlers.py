"""Demo handler for topic ``orders``: checks each order's lifecycle arrives in order and
fails a few percent of calls so retries show on the dashboard."""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Sequence

from workers.message import ConsumeContext, ConsumeStatus, Message

log = logging.getLogger(__name__)

STEPS = ("created", "paid", "shipped", "completed")
FAILURE_RATE = 0.03  # a few percent of handler calls fail, as the demo promises
_last_step: dict[str, int] = {}


def handle_order(messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
    if random.random() < FAILURE_RATE:
        ctx.set_suspend_ms(200)
        raise RuntimeError("demo: mail server timed out")
    for m in messages:
        step = json.loads(m.body).get("step", "")
        index = STEPS.index(step) if step in STEPS else -1
        previous = _last_step.get(m.key, -1)
        if index not in (previous + 1, previous, 0):
            log.warning("demo: order %s went from %s to %s", m.key, previous, index)
        _last_step[m.key] = index
    time.sleep(random.uniform(0.001, 0.004))
    return ConsumeStatus.SUCCESS
