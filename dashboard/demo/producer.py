"""The demo producer: orders move created → paid → shipped → completed, many at once.

It sends as docs/api.md §3 tells users to: every message has
an idempotency key, and a send that fails — Redis away or stalled, the message maybe
stored — is sent again with the same key until it returns, so an outage neither stops
the demo nor stores a message twice. An outage is logged once when it starts and once
when it ends, without a traceback.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
import uuid
from typing import Any

from lockstep.workers.errors import SendError
from lockstep.workers.producer import Producer, SendResult

STEPS = ("created", "paid", "shipped", "completed")
# Retries start fast (a blip is over in a moment) and back off to one every 2 s, so a
# long outage costs Redis little once it is back.
RETRY_FIRST_DELAY_S = 0.1
RETRY_MAX_DELAY_S = 2.0

logger = logging.getLogger(__name__)


def run_demo_producer(redis_url: str, topic: str, rate: float, stop: threading.Event) -> int:
    """Send about ``rate`` messages a second until ``stop`` is set; return how many were
    stored. Each body carries its idempotency key as ``id`` (unique per message)."""
    producer = Producer(redis_url)
    run = uuid.uuid4().hex[:12]  # a restarted producer must not reuse a key's first send
    open_orders: dict[str, int] = {}
    next_id = 1
    sent = 0
    interval = 1.0 / rate
    while not stop.is_set():
        if len(open_orders) < 200 or random.random() < 0.2:
            open_orders[f"order-{next_id}"] = 0
            next_id += 1
        key = random.choice(list(open_orders))
        step = open_orders[key]
        message_id = f"demo-{run}-{sent}"
        body = {"id": message_id, "order_id": key, "step": STEPS[step], "at": time.time()}
        if send_until_stored(producer, topic, key, body, message_id, stop) is None:
            break  # stopped during an outage
        sent += 1
        if step + 1 == len(STEPS):
            del open_orders[key]
        else:
            open_orders[key] = step + 1
        stop.wait(interval)
    producer.close()
    return sent


def send_until_stored(
    producer: Producer,
    topic: str,
    key: str,
    body: dict[str, Any],
    idempotency_key: str,
    stop: threading.Event,
) -> SendResult | None:
    """Send ``body`` until Redis stores it (at most once, by ``idempotency_key``); None
    when ``stop`` was set first. Logs the outage once at its start and once at its end."""
    payload = json.dumps(body).encode()
    delay = RETRY_FIRST_DELAY_S
    failed_at = 0.0
    while True:
        try:
            result = producer.send(
                topic, key, payload, {"source": "demo"}, idempotency_key=idempotency_key
            )
        except SendError as exc:
            if not failed_at:
                failed_at = time.monotonic()
                logger.warning("demo producer: Redis did not take a send, retrying: %s", exc)
            if stop.wait(delay):
                return None
            delay = min(delay * 2, RETRY_MAX_DELAY_S)
            continue
        if failed_at:
            logger.warning(
                "demo producer: sending again after %.1f s of Redis failures",
                time.monotonic() - failed_at,
            )
        return result
