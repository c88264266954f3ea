"""The demo producer: orders move created → paid → shipped → completed, many at once."""

from __future__ import annotations

import json
import random
import threading
import time

from lockstep.workers.producer import Producer

STEPS = ("created", "paid", "shipped", "completed")


def run_demo_producer(redis_url: str, topic: str, rate: float, stop: threading.Event) -> int:
    """Send about ``rate`` messages a second until ``stop`` is set; return how many."""
    producer = Producer(redis_url)
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
        body = json.dumps({"order_id": key, "step": STEPS[step], "at": time.time()}).encode()
        producer.send(topic, key, body, {"source": "demo"})
        sent += 1
        if step + 1 == len(STEPS):
            del open_orders[key]
        else:
            open_orders[key] = step + 1
        stop.wait(interval)
    producer.close()
    return sent
