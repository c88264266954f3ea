"""The demo's held keys as stuck episodes (docs/analytics.md §4): each row's duration is
its end minus its start, its retries and error are those of the message that caused it
(not the hold's "held"), and an open row has no end and no outcome but "open"."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pyspark.sql import SparkSession

from lockstep.analytics import load, transform
from tests.analytics import reference
from tests.analytics.builders import DECLINED, at, day_data, held_key_day

THRESHOLD_S = 60.0


def _utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


@pytest.fixture(scope="module")
def episodes(spark: SparkSession) -> dict[str, dict]:
    """The episodes by key, computed once for the module (each Spark job costs seconds)."""
    samples, events = held_key_day()
    data = day_data(spark, samples=samples, events=events)
    found = transform.stuck_episodes(data.samples, data.events, THRESHOLD_S)
    return {e["key"]: e for e in load.episode_rows(found)}


def test_every_held_key_row_agrees_with_its_own_columns(episodes: dict[str, dict]):
    assert set(episodes) == {"order-200", "order-100"}
    for e in episodes.values():
        assert e["retries"] == 3  # three retries before its dead letter, held or not
        assert e["error"] == DECLINED.format(e["key"].split("-")[1])
        if e["open"]:
            assert (e["ended_at"], e["outcome"]) == (None, "open")
            assert e["duration_s"] == (e["last_seen_at"] - e["started_at"]).total_seconds()
        else:
            assert e["outcome"] != "open"
            assert e["duration_s"] == (e["ended_at"] - e["started_at"]).total_seconds()


def test_a_replayed_hold_runs_from_the_first_failure_to_the_release(episodes: dict[str, dict]):
    replayed = episodes["order-200"]
    assert replayed["started_at"] == _utc(at(18, 20))  # its message's first failure
    assert replayed["ended_at"] == _utc(at(18, 23, 25))  # the hold released
    assert (replayed["duration_s"], replayed["outcome"]) == (205.0, "replayed")


def test_a_hold_still_in_place_at_the_last_sample_is_open_though_a_replay_was_asked(
    episodes: dict[str, dict],
):
    held = episodes["order-100"]
    assert (held["open"], held["ended_at"], held["outcome"]) == (True, None, "open")
    assert held["started_at"] == _utc(at(18, 21))
    assert held["duration_s"] == 540.0  # to the report's last sample, 18:30:00


def test_spark_and_the_plain_python_reference_agree(episodes: dict[str, dict]):
    samples, events = held_key_day()
    expected = reference.key_episodes(samples, events, THRESHOLD_S)
    found = {
        (e["group"], e["queue"], e["key"], e["offset"]): {
            "start_ms": int(e["started_at"].timestamp() * 1000),
            "end_ms": int(e["ended_at"].timestamp() * 1000) if e["ended_at"] else None,
            **{k: e[k] for k in ("open", "duration_s", "retries", "error", "outcome")},
        }
        for e in episodes.values()
    }
    assert found == expected
