"""Each lag sample says, besides the lag, why a queue waits: the owner's state and
retries, the key at the committed offset, the keys blocked behind a failing message
(key ordering) and the keys held behind their dead letter; the writer carries them into
the ``samples`` data set, where the job finds stuck keys (docs/analytics.md §4)."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from lockstep.dashboard.monitor.tasks import lag_samples, sample_lag
from lockstep.dashboard.reports.writer import write_new_data
from lockstep.workers import create_topic
from lockstep.workers import events as ev
from lockstep.workers.config import AfterDlq, Ordering
from tests.dashboard.helpers import produce
from tests.dashboard.reports.writing import analytics_uri, rows
from tests.dashboard.scenarios import FailOn, consuming, ingest_until
from tests.support import probe_until

__all__ = ["analytics_uri"]

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]

RETRY_QUICKLY: dict[str, Any] = {"retry_initial_ms": 20, "retry_max_ms": 40}


def _sample_of(client: redis.Redis, queue: int) -> dict[str, Any]:
    """The details of the mailer group's sample of ``queue``; empty while the group has
    none yet (its consumer, just started, has not subscribed)."""
    found = [e for e in lag_samples(client) if e.group == "mailer" and e.queue == queue]
    assert len(found) <= 1
    return found[0].details if found else {}


def _written_sample(client: redis.Redis, uri: str) -> dict[str, Any]:
    """The sample of the queue as it reaches the data set: sampled by the beat task,
    ingested, written."""
    assert sample_lag() == 1  # one topic, one queue, one group
    ingest_until(client, ev.LAG_SAMPLED)
    assert write_new_data()["samples"] >= 1
    (row,) = [r for r in rows(uri, "samples") if r["lag"]]
    return row


def test_it_lists_a_key_blocked_behind_its_failing_message(
    analytics_uri: str, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 1)
    poison, *waiting = produce(redis_url, "orders", ["order-poison"] * 3)
    with consuming(
        redis_url,
        "orders",
        "mailer",
        FailOn("order-poison", error="CardDeclined: card declined " + "x" * 300),
        ordering=Ordering.KEY,
        max_reconsume_times=1000,
        **RETRY_QUICKLY,
    ):
        details = probe_until(
            lambda: _sample_of(redis_client, poison.queue),
            lambda d: bool(d) and bool(d["blocked_keys"]) and d["blocked_keys"][0]["retries"] >= 2,
        )
        row = _written_sample(redis_client, analytics_uri)

    (blocked,) = details["blocked_keys"]
    assert (blocked["key"], blocked["offset"], blocked["waiting"], blocked["held"]) == (
        "order-poison",
        poison.offset,
        len(waiting),
        False,
    )
    assert blocked["error"] == ("RuntimeError: CardDeclined: card declined " + "x" * 300)[:200]
    assert isinstance(blocked["since_ms"], int)
    assert (details["blocked_count"], details["held_keys"], details["parked"]) == (1, 0, 0)
    assert (details["head_offset"], details["head_key"], details["lag"]) == (
        poison.offset,
        "order-poison",
        3,
    )
    (written,) = row["blocked_keys"]
    assert (written["key"], written["offset"], written["held"], row["head_key"]) == (
        "order-poison",
        poison.offset,
        False,
        "order-poison",
    )
    assert (row["blocked_count"], row["held_keys"], row["lag"]) == (1, 0, 3)
    assert (details["state"], row["state"]) == ("blocked", "blocked")


def test_it_lists_a_key_held_behind_its_dead_letter_with_its_parked_messages(
    analytics_uri: str, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 1)
    poison, *parked = produce(redis_url, "orders", ["order-poison"] * 3)
    with consuming(
        redis_url,
        "orders",
        "mailer",
        FailOn("order-poison", error="card declined"),
        ordering=Ordering.KEY,
        after_dlq=AfterDlq.HOLD,
        max_reconsume_times=0,
        **RETRY_QUICKLY,
    ):
        details = probe_until(
            lambda: _sample_of(redis_client, poison.queue),
            lambda d: (
                bool(d) and d["parked"] == len(parked) and d["committed_offset"] == d["max_offset"]
            ),
        )
        row = _written_sample(redis_client, analytics_uri)

    (held,) = [b for b in details["blocked_keys"] if b["held"]]
    assert {k: held[k] for k in ("key", "offset", "waiting", "error", "retries")} == {
        "key": "order-poison",
        "offset": poison.offset,
        "waiting": len(parked),
        "error": "held",
        "retries": None,
    }
    assert isinstance(held["since_ms"], int)
    assert (details["held_keys"], details["parked"], details["lag"]) == (1, 2, 2)
    assert (details["head_offset"], details["head_key"]) == (None, "")
    (written,) = [b for b in row["blocked_keys"] if b["held"]]
    assert (written["key"], written["offset"], written["waiting"], row["held_keys"]) == (
        "order-poison",
        poison.offset,
        len(parked),
        1,
    )


def test_it_names_the_retried_head_message_of_a_queue_ordered_group(
    analytics_uri: str, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 1)
    done, poison, _behind = produce(redis_url, "orders", ["order-ok", "order-poison", "order-2"])
    with consuming(
        redis_url,
        "orders",
        "mailer",
        FailOn("order-poison"),
        max_reconsume_times=1000,
        **RETRY_QUICKLY,
    ):
        details = probe_until(
            lambda: _sample_of(redis_client, poison.queue),
            lambda d: bool(d) and d["retries"] >= 2,
        )

    assert (details["committed_offset"], details["lag"]) == (done.offset + 1, 2)
    assert (details["head_offset"], details["head_key"]) == (poison.offset, "order-poison")
    assert details["retries"] >= 2
    assert (details["blocked_count"], details["blocked_keys"]) == (0, [])
