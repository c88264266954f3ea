"""GET /metrics with ``LOCKSTEP_METRICS_DETAIL=group``: no series carries a queue label;
the per-queue gauges come once per (topic, group) under the same names (amounts summed,
ages and the stuck flag the group's worst queue), with counts of queues, the lag nobody
holds and the messages handled beside them; the counters are summed per group. Checked
against the queue detail of the same hand-built state and against hand-known numbers."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import pytest
import redis
from django.test import Client

from lockstep.dashboard.monitor.ingest import Ingester
from lockstep.dashboard.web.store.fleet import FleetWriter
from tests.dashboard.test_metrics_endpoint import Family, _write_events, parse, value_of
from tests.dashboard.test_metrics_queue_health_gauges import _build_state

pytestmark = [pytest.mark.django_db, pytest.mark.on_postgres]

MAILER = {"topic": "orders", "group": "mailer"}
AUDITOR = {"topic": "orders", "group": "auditor"}
# Gauges with a group aggregate, and how it is made from the queues' values.
SUMMED = (
    "lockstep_queue_lag_messages",
    "lockstep_queue_parked_messages",
    "lockstep_queue_held_keys",
    "lockstep_queue_blocked_keys",
    "lockstep_dead_letters_waiting",
)
WORST = ("lockstep_queue_lag_seconds", "lockstep_queue_stuck")
QUEUE_ONLY = (
    "lockstep_queue_lock_token",
    "lockstep_queue_owned",
    "lockstep_queue_committed_offset",
)


def _build(client: redis.Redis) -> None:
    """The health gauges' state (test_metrics_queue_health_gauges), swept once by a fleet
    writer that says it is live: both details then read the same rows (time lag would
    move between two sweeps)."""
    _build_state(client)
    FleetWriter(client).sweep()


def _scrape(client: Client, settings: Any, detail: str) -> dict[str, Family]:
    settings.LOCKSTEP_METRICS_DETAIL = detail
    response = client.get("/metrics")
    assert response.status_code == 200
    return parse(response.content.decode())


def _by_group(
    family: Family, combine: Callable[[Iterable[float]], float]
) -> dict[tuple[str, str], float]:
    """A per-queue family's values combined per (topic, group)."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for labels, value in family.samples.items():
        found = dict(labels)
        values[found["topic"], found["group"]].append(value)
    return {where: combine(found) for where, found in values.items()}


def _groups(family: Family) -> dict[tuple[str, str], float]:
    out = {}
    for labels, value in family.samples.items():
        found = dict(labels)
        assert set(found) == {"topic", "group"}, found
        out[found["topic"], found["group"]] = value
    return out


def test_no_series_carries_a_queue_label(
    client: Client, redis_client: redis.Redis, settings: Any
) -> None:
    _build(redis_client)

    families = _scrape(client, settings, "group")

    labelled = {
        name: labels
        for name, family in families.items()
        for labels in family.samples
        if "queue" in dict(labels)
    }
    assert labelled == {}
    assert [name for name in QUEUE_ONLY if name in families] == []
    assert value_of(families, "lockstep_metrics_detail", detail="group") == 1


def test_it_sums_amounts_and_takes_the_worst_queue_of_each_group(
    client: Client, redis_client: redis.Redis, settings: Any
) -> None:
    _build(redis_client)

    per_queue = _scrape(client, settings, "queue")
    per_group = _scrape(client, settings, "group")

    for name in SUMMED:
        assert _groups(per_group[name]) == _by_group(per_queue[name], sum), name
    for name in WORST:
        assert _groups(per_group[name]) == _by_group(per_queue[name], max), name
    # By hand: mailer's queue 0 has 2 blocked keys, its queue 1 a held key, 2 parked
    # messages and 3 dead letters; both are stuck. Nothing is wrong with auditor's.
    assert value_of(per_group, "lockstep_queue_blocked_keys", **MAILER) == 2
    assert value_of(per_group, "lockstep_queue_held_keys", **MAILER) == 1
    assert value_of(per_group, "lockstep_queue_parked_messages", **MAILER) == 2
    assert value_of(per_group, "lockstep_dead_letters_waiting", **MAILER) == 3
    assert value_of(per_group, "lockstep_queue_stuck", **MAILER) == 1
    assert value_of(per_group, "lockstep_queue_stuck", **AUDITOR) == 0
    assert value_of(per_group, "lockstep_queue_lag_messages", **AUDITOR) == 12  # 10 + 2


def test_it_counts_the_queues_owned_and_stuck_and_the_lag_nobody_holds(
    client: Client, redis_client: redis.Redis, settings: Any
) -> None:
    _build(redis_client)

    per_queue = _scrape(client, settings, "queue")
    per_group = _scrape(client, settings, "group")

    lag = per_queue["lockstep_queue_lag_messages"].samples
    owned = per_queue["lockstep_queue_owned"].samples
    unowned_lag = {(dict(labels)["topic"], dict(labels)["group"]): 0.0 for labels in lag}
    for labels, value in lag.items():
        if owned[labels] == 0:
            unowned_lag[dict(labels)["topic"], dict(labels)["group"]] += value
    assert _groups(per_group["lockstep_group_unowned_lag_messages"]) == unowned_lag
    assert unowned_lag[("orders", "auditor")] == 12
    assert _groups(per_group["lockstep_group_queues"]) == {
        ("orders", "mailer"): 2,
        ("orders", "auditor"): 2,
    }
    # mailer's queue 0 is held by its live consumer; nobody holds auditor's.
    assert _groups(per_group["lockstep_group_queues_owned"]) == {
        ("orders", "mailer"): 1,
        ("orders", "auditor"): 0,
    }
    assert _groups(per_group["lockstep_group_queues_stuck"]) == {
        ("orders", "mailer"): 2,
        ("orders", "auditor"): 0,
    }


def test_it_counts_what_each_group_handled_and_what_each_topic_produced(
    client: Client, redis_client: redis.Redis, settings: Any
) -> None:
    _build(redis_client)

    per_queue = _scrape(client, settings, "queue")
    per_group = _scrape(client, settings, "group")

    produced = per_queue["lockstep_queue_max_offset"].samples
    assert per_group["lockstep_queue_max_offset"].samples == {
        frozenset({("topic", "orders")}): sum(produced.values())
    }
    handled: dict[tuple[str, str], float] = defaultdict(float)
    for labels, lag in per_queue["lockstep_queue_lag_messages"].samples.items():
        found = dict(labels)
        max_offset = produced[frozenset({("topic", found["topic"]), ("queue", found["queue"])})]
        handled[found["topic"], found["group"]] += max_offset - lag
    assert _groups(per_group["lockstep_group_handled_messages"]) == handled


def test_it_sums_the_counters_per_group_and_keeps_the_ingesters_own(
    client: Client, redis_client: redis.Redis, settings: Any
) -> None:
    _build(redis_client)
    _write_events(redis_client)
    ingester = Ingester(redis_client)
    while ingester.run_once(block_ms=0):
        pass

    per_queue = _scrape(client, settings, "queue")
    per_group = _scrape(client, settings, "group")

    for name in (
        "lockstep_consume_retries_total",
        "lockstep_dead_letters_total",
        "lockstep_lock_owner_changes_total",
        "lockstep_fencing_rejections_total",
    ):
        assert per_group[name].type == "counter"
        assert _groups(per_group[name]) == _by_group(per_queue[name], sum), name
    assert value_of(per_group, "lockstep_lock_owner_changes_total", **MAILER) == 3
    assert (
        value_of(
            per_group,
            "lockstep_lock_owner_changes_total",
            topic='we"ird\\topic\nname',
            group="mailer",
        )
        == 1
    )
    assert value_of(per_group, "lockstep_consume_retries_total", **MAILER) == 3
    assert value_of(per_group, "lockstep_fencing_rejections_total", **MAILER) == 1
    assert value_of(per_group, "lockstep_events_lost_total") == 0
    assert value_of(per_group, "lockstep_consumers", **MAILER) == 1
    assert value_of(per_group, "lockstep_consumers_silent", **AUDITOR) == 1
