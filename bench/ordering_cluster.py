"""Ordering on Redis Cluster next to standalone Redis, in one run.

The same cases run against a private standalone redis-server and a private local Redis
Cluster (3 masters; with ``replicas`` one replica each), interleaved per repeat so both
see the same machine load:
- queue ordering, no-op handler, batch 32, 8 queues (the Redis path: reads, commits,
  lock renewals, events);
- key ordering, 64 lanes, a 10 ms (sleeping) handler, 8 queues, 4,000 keys.
Each consumer is a ``lockstep consume`` subprocess; every handling is checked for per-key
order by the bench handlers, and the run reports the order violations (must be 0).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench.common import load_topic, private_redis
from bench.local_cluster import redis_cluster
from bench.ordering import KEY_COUNT, LANES, NOOP, NOOP_BATCH, QUEUES, SLEEP, consume_case
from lockstep.workers.connection import connect

TARGETS = ("standalone", "cluster")


@contextmanager
def _cluster(replicas: int) -> Iterator[str]:
    with redis_cluster(masters=3, replicas=replicas) as cluster:
        yield cluster.url


def _cases(url: str, tag: str, noop_messages: int, key_messages: int) -> dict[str, Any]:
    client = connect(url)
    load_topic(client, f"noop-{tag}", QUEUES, noop_messages, key_count=KEY_COUNT)
    load_topic(client, f"key-{tag}", QUEUES, key_messages, key_count=KEY_COUNT)
    client.close()
    noop = consume_case(
        url,
        f"noop-{tag}",
        f"noop-{tag}",
        QUEUES,
        noop_messages,
        NOOP,
        ["--ordering", "queue", "--batch-size", str(NOOP_BATCH)],
    )
    key = consume_case(
        url,
        f"key-{tag}",
        f"key-{tag}",
        QUEUES,
        key_messages,
        SLEEP,
        ["--ordering", "key", "--lanes", str(LANES)],
    )
    return {"noop": noop, "key_io": key}


def run(
    noop_messages: int = 20_000, key_messages: int = 6_000, repeats: int = 3, replicas: int = 1
) -> dict[str, Any]:
    started = time.monotonic()
    runs: dict[str, list[dict[str, Any]]] = {t: [] for t in TARGETS}
    with private_redis() as standalone, _cluster(replicas) as cluster:
        urls = {"standalone": standalone, "cluster": cluster}
        # The consumers' settings want a standalone Redis for Celery and Channels when
        # REDIS_URL is a cluster (docs/cluster.md §6); they use neither.
        os.environ["CELERY_BROKER_URL"] = os.environ["CHANNELS_REDIS_URL"] = standalone
        for r in range(repeats):
            for target in TARGETS if r % 2 == 0 else reversed(TARGETS):
                runs[target].append(
                    _cases(urls[target], f"{target}-{r}", noop_messages, key_messages)
                )

    def med(target: str, case: str) -> float:
        return statistics.median(run[case]["rate"] for run in runs[target])

    result: dict[str, Any] = {
        "queues": QUEUES,
        "keys": KEY_COUNT,
        "lanes": LANES,
        "repeats": repeats,
        "noop_messages": noop_messages,
        "key_io_messages": key_messages,
        "cluster_layout": {"masters": 3, "replicas_per_master": replicas},
    }
    for target in TARGETS:
        result[target] = {
            "queue_mode_noop_msgs_per_s": round(med(target, "noop")),
            "key_mode_io_msgs_per_s": round(med(target, "key_io")),
            "queue_mode_noop_runs": [round(x["noop"]["rate"]) for x in runs[target]],
            "key_mode_io_runs": [round(x["key_io"]["rate"]) for x in runs[target]],
            "violations": sum(x[c]["violations"] for x in runs[target] for c in x),
            "duplicates": sum(x[c]["duplicates"] for x in runs[target] for c in x),
        }
    result["cluster_to_standalone"] = {
        "queue_mode_noop": round(med("cluster", "noop") / med("standalone", "noop"), 3),
        "key_mode_io": round(med("cluster", "key_io") / med("standalone", "key_io"), 3),
    }
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    return result
