"""Spark's reports against ``tests/analytics/reference.py`` on small random logs."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from lockstep.analytics import load, transform
from tests.analytics import reference
from tests.analytics.builders import HOUR, SECOND, T0, day_data, event, message, sample

THRESHOLD_S = 30.0
MAX_GAP_S = 45.0
MIN_STUCK_S = 20.0

slow = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Times in a few hours of the day, on a 5 s grid so that gaps and ties happen.
times = st.integers(0, 3 * HOUR // (5 * SECOND)).map(lambda i: T0 + i * 5 * SECOND)


@st.composite
def sample_logs(draw: Any) -> list[dict[str, Any]]:
    rows = []
    for queue in range(draw(st.integers(1, 3))):
        stamps = sorted(draw(st.sets(times, min_size=1, max_size=25)))
        committed = draw(st.integers(0, 50))
        for ts in stamps:
            committed += draw(st.sampled_from([0, 0, 1, 5, -3]))
            rows.append(
                sample(
                    ts,
                    queue=queue,
                    lag=draw(st.integers(0, 40)),
                    committed=max(committed, 0),
                    time_lag_s=draw(st.sampled_from([0.0, 10.0, 30.0, 31.5, 120.0])),
                )
            )
    return rows


def _compare_rows(spark_rows: list[dict], expected: dict[tuple, dict], keys: tuple) -> None:
    assert {tuple(r[k] for k in keys) for r in spark_rows if r["samples"]} == set(expected)
    for row in spark_rows:
        place = tuple(row[k] for k in keys)
        if place not in expected:
            continue
        for name, value in expected[place].items():
            assert row[name] == pytest.approx(value), (place, name)


@slow
@given(samples=sample_logs())
def test_hourly_lag_and_consumed_agree(spark: SparkSession, samples: list[dict[str, Any]]):
    data = day_data(spark, samples=samples)
    with_gaps = transform.with_seconds_above(data.samples, THRESHOLD_S, MAX_GAP_S)
    rows = load.rows(transform.hourly_queue(with_gaps, transform.produced_per_hour(data.messages)))
    expected = reference.hourly_queue(samples, THRESHOLD_S, MAX_GAP_S)
    _compare_rows(rows, expected, ("topic", "group", "queue", "hour"))


@slow
@given(samples=sample_logs())
def test_queue_stuck_episodes_agree(spark: SparkSession, samples: list[dict[str, Any]]):
    data = day_data(spark, samples=samples)
    found = load.episode_rows(transform.stuck_episodes(data.samples, data.events, MIN_STUCK_S))
    as_tuples = sorted(
        (
            e["queue"],
            e["offset"],
            int(e["started_at"].timestamp() * 1000),
            int(e["ended_at"].timestamp() * 1000) if e["ended_at"] else None,
            e["open"],
            e["duration_s"],
        )
        for e in found
    )
    assert as_tuples == reference.queue_episodes(samples, MIN_STUCK_S)


@st.composite
def message_logs(draw: Any) -> list[dict[str, Any]]:
    keys = st.sampled_from([f"k{i}" for i in range(14)])
    return [
        message(draw(times), draw(keys), queue=draw(st.integers(0, 3)))
        for _ in range(draw(st.integers(1, 80)))
    ]


@slow
@given(messages=message_logs())
def test_key_skew_and_produced_agree(spark: SparkSession, messages: list[dict[str, Any]]):
    data = day_data(spark, messages=messages)
    skew = {(r["topic"], r["queue"]): r for r in load.rows(transform.key_skew(data.messages))}
    expected = reference.key_skew(messages)
    assert set(skew) == set(expected)
    for place, figures in expected.items():
        for name, value in figures.items():
            assert skew[place][name] == pytest.approx(value), (place, name)
    produced = load.rows(transform.produced_per_hour(data.messages))
    as_counts = {(r["topic"], r["queue"], r["hour"]): r["produced"] for r in produced}
    assert as_counts == dict(reference.produced_per_hour(messages))


@st.composite
def failure_logs(draw: Any) -> list[dict[str, Any]]:
    rows = []
    for _ in range(draw(st.integers(1, 40))):
        kind = draw(st.sampled_from(["consume_failed", "dead_lettered", "lock_acquired"]))
        rows.append(
            event(
                kind,
                draw(times),
                key=draw(st.sampled_from(["a", "b", "c", "d", ""])),
                n=draw(st.integers(1, 4)) if kind == "consume_failed" else None,
                offset=draw(st.integers(0, 9)),
                error=draw(st.sampled_from(["ValueError: x", "KeyError: y", "E: z"])),
                group=draw(st.sampled_from(["mailer", "billing"])),
            )
        )
    return rows


@slow
@given(events=failure_logs(), top_n=st.integers(1, 3))
def test_retry_hotspots_agree(spark: SparkSession, events: list[dict[str, Any]], top_n: int):
    data = day_data(spark, events=events)
    rows = load.rows(
        transform.retry_hotspots(data.events, top_n), transform.ORDER["retry_hotspots"]
    )
    found = [(r["group"], r["kind"], r["name"], r["retries"], r["dead_letters"]) for r in rows]
    assert found == reference.retry_hotspots(events, top_n)
