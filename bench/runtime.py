"""Throughput of one consumer process, queue ordering, no-op handler, 8 queues.

Measured from the first commit to the last, so process start-up is not counted."""

from __future__ import annotations

import statistics
from typing import Any

import redis

from bench.common import load_topic, private_redis, time_consumer

HANDLER = "bench.handlers.noop"


def run(messages: int = 20_000, repeats: int = 3) -> dict[str, Any]:
    result: dict[str, Any] = {"messages": messages, "queues": 8, "repeats": repeats}
    with private_redis() as url:
        client = redis.Redis.from_url(url)
        for batch in (1, 32):
            rates = []
            for r in range(repeats):
                topic = f"bench-b{batch}-{r}"
                load_topic(client, topic, 8, messages, key_count=1000)
                seconds, rss = time_consumer(
                    url,
                    topic,
                    "bench",
                    8,
                    messages,
                    ["--handler", HANDLER, "--batch-size", str(batch)],
                )
                rates.append(messages / seconds)
            result[f"noop_batch{batch}_msgs_per_s"] = round(statistics.median(rates))
            result[f"noop_batch{batch}_runs"] = [round(x) for x in rates]
            result[f"peak_rss_mb_batch{batch}"] = rss
    return result
