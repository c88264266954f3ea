"""Stored events go to the ``events`` data set and lag samples to ``samples``, each row in
the partition of its own UTC date and hour, with the columns docs/analytics.md §1 lifts
out of the details (so the job never parses JSON)."""

from __future__ import annotations

import json

import pytest

from lockstep.dashboard.reports.writer import write_new_data
from lockstep.workers import events as ev
from tests.dashboard.reports.writing import analytics_uri, ms_of, rows, rows_by_file, store

__all__ = ["analytics_uri"]

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]

LAST_MS_OF_DAY = ms_of("2024-03-09T23:59:59.999")
MIDNIGHT = ms_of("2024-03-10T00:00:00")
MORNING = ms_of("2024-03-10T05:30:00.123")
QUEUE = {"topic": "orders", "group": "billing", "queue": 1}


def test_it_writes_each_row_into_the_partition_of_its_utc_hour(analytics_uri: str) -> None:
    failed = store(
        ev.CONSUME_FAILED,
        LAST_MS_OF_DAY,
        **QUEUE,
        key="order-7",
        token=3,
        consumer="c1",
        details={"offsets": [5, 6], "reconsume_times": 2, "error": "Declined: card: no"},
    )
    committed = store(
        ev.OFFSET_COMMITTED, MIDNIGHT, **QUEUE, token=3, details={"from_offset": 5, "offset": 9}
    )
    store(ev.LAG_SAMPLED, MORNING, **QUEUE, details={"lag": 4})

    written = write_new_data()

    assert written == {"messages": 0, "events": 2, "samples": 1}
    assert {
        f: [r["id"] for r in rs] for f, rs in rows_by_file(analytics_uri, "events").items()
    } == {
        f"events/date=2024-03-09/hour=23/part-e{failed.pk}.parquet": [failed.stream_id],
        f"events/date=2024-03-10/hour=00/part-e{failed.pk}.parquet": [committed.stream_id],
    }
    assert list(rows_by_file(analytics_uri, "samples")) == [
        f"samples/date=2024-03-10/hour=05/part-e{failed.pk}.parquet"
    ]
    (sample,) = rows(analytics_uri, "samples")
    assert (sample["ts_ms"], sample["lag"], sample["date"], sample["hour"]) == (
        MORNING,
        4,
        "2024-03-10",
        5,
    )


def test_it_lifts_offsets_counts_and_error_types_out_of_each_events_details(
    analytics_uri: str,
) -> None:
    store(
        ev.CONSUME_FAILED,
        MORNING,
        **QUEUE,
        key="order-7",
        token=3,
        consumer="c1",
        details={
            "offsets": [5, 6, 7],
            "reconsume_times": 2,
            "max_reconsume_times": 5,
            "error": " PaymentDeclined : card declined: insufficient funds",
            "retry_in_ms": 100,
        },
    )
    store(
        ev.OFFSET_COMMITTED,
        MORNING + 1,
        **QUEUE,
        token=3,
        consumer="c1",
        details={"from_offset": 5, "offset": 9, "commits": 3},
    )
    store(
        ev.DEAD_LETTERED,
        MORNING + 2,
        **QUEUE,
        key="order-7",
        token=3,
        consumer="c1",
        details={"offset": 7, "reconsume_times": 5, "error": "E" * 300, "dlq_id": "1700-0"},
    )
    store(
        ev.KEY_PARKED,
        MORNING + 3,
        **QUEUE,
        key="order-7",
        details={"offset": 7, "dlq_id": "1700-0"},
    )
    store(
        ev.MESSAGES_PARKED,
        MORNING + 4,
        **QUEUE,
        key="order-7",
        details={"offsets": [8, 10], "committed": 11},
    )
    store(
        ev.DEAD_LETTER_REPLAYED,
        MORNING + 5,
        **QUEUE,
        key="order-7",
        details={"dlq_id": "1700-0", "offset": 7, "actor": "olga", "new_offset": 12},
    )
    lost = store(
        "events_lost",
        MORNING + 6,
        details={"after_id": "1-0", "resumed_at_id": "9-0", "lost": 7, "reason": "trimmed"},
    )

    write_new_data()

    found = {r["type"]: r for r in rows(analytics_uri, "events")}
    lifted = {
        t: (r["offset"], r["offset_to"], r["n"], r["reconsume_times"], r["error_type"], r["dlq_id"])
        for t, r in found.items()
    }
    assert lifted == {
        ev.CONSUME_FAILED: (5, None, 3, 2, "PaymentDeclined", None),
        ev.OFFSET_COMMITTED: (5, 9, 3, None, None, None),
        ev.DEAD_LETTERED: (7, None, None, 5, "E" * 200, "1700-0"),
        ev.KEY_PARKED: (7, None, None, None, None, "1700-0"),
        ev.MESSAGES_PARKED: (8, None, 2, None, None, None),
        ev.DEAD_LETTER_REPLAYED: (7, None, None, None, None, "1700-0"),
        "events_lost": (None, None, None, None, None, None),
    }
    failed = found[ev.CONSUME_FAILED]
    assert {
        k: failed[k] for k in ("ts_ms", "topic", "group", "queue", "key", "token", "consumer")
    } == {
        "ts_ms": MORNING,
        "topic": "orders",
        "group": "billing",
        "queue": 1,
        "key": "order-7",
        "token": 3,
        "consumer": "c1",
    }
    assert json.loads(failed["details"])["retry_in_ms"] == 100
    assert " " not in found[ev.OFFSET_COMMITTED]["details"]  # compact JSON
    gap = found["events_lost"]
    assert (gap["id"], gap["topic"], gap["queue"], json.loads(gap["details"])["lost"]) == (
        lost.stream_id,
        "",
        None,
        7,
    )


def test_it_maps_enriched_and_older_samples_alike_with_nulls_for_missing_fields(
    analytics_uri: str,
) -> None:
    blocked = {
        "key": "order-7",
        "offset": 5,
        "retries": 3,
        "waiting": 2,
        "since_ms": MORNING - 60_000,
        "error": "Declined: card",
        "held": False,
    }
    held = {
        **blocked,
        "key": "order-9",
        "offset": 2,
        "retries": None,
        "error": "held",
        "held": True,
    }
    store(
        ev.LAG_SAMPLED,
        MORNING,
        **QUEUE,
        details={
            "max_offset": 10,
            "committed_offset": 5,
            "lag": 5,
            "time_lag_s": 61.5,
            "owner": "c1",
            "state": "blocked",
            "retries": 3,
            "head_offset": 5,
            "head_key": "order-7",
            "blocked_count": 1,
            "blocked_keys": [blocked, held],
            "held_keys": 1,
            "parked": 4,
        },
    )
    store(
        ev.LAG_SAMPLED,
        MORNING + 10_000,
        **QUEUE,
        details={"max_offset": 10, "committed_offset": 10, "lag": 0, "time_lag_s": 0, "owner": ""},
    )

    assert write_new_data() == {"messages": 0, "events": 0, "samples": 2}

    new, old = sorted(rows(analytics_uri, "samples"), key=lambda r: r["ts_ms"])
    assert new == {
        "ts_ms": MORNING,
        "topic": "orders",
        "group": "billing",
        "queue": 1,
        "max_offset": 10,
        "committed_offset": 5,
        "lag": 5,
        "time_lag_s": 61.5,
        "owner": "c1",
        "state": "blocked",
        "head_offset": 5,
        "head_key": "order-7",
        "retries": 3,
        "blocked_count": 1,
        "held_keys": 1,
        "parked": 4,
        "blocked_keys": [blocked, held],
        "date": "2024-03-10",
        "hour": 5,
    }
    assert {k: old[k] for k in ("lag", "time_lag_s", "owner", "state", "head_offset")} == {
        "lag": 0,
        "time_lag_s": 0.0,
        "owner": "",
        "state": None,
        "head_offset": None,
    }
    assert (old["head_key"], old["blocked_count"], old["parked"], old["blocked_keys"]) == (
        None,
        None,
        None,
        [],
    )
