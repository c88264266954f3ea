"""A key held behind its dead letter (key ordering, ``after_dlq = hold``) waits for an
operator: once held for ``LOCKSTEP_STUCK_AFTER_SECONDS`` (docs/stuck.md) the overview and
the group page count it as the same stuck queue, reason ``held_key``, so a group the
overview flags never reads "0 stuck" on its own page."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.workers import create_topic
from lockstep.workers.config import AfterDlq, Ordering
from tests.dashboard.helpers import get_json, produce, summary_group
from tests.dashboard.scenarios import FailOn, consuming
from tests.support import probe_until

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]

STUCK_AFTER_S = 1.0


def test_it_counts_a_held_key_as_stuck_on_the_overview_and_the_group_page_alike(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str, settings: Any
) -> None:
    settings.LOCKSTEP_STUCK_AFTER_SECONDS = STUCK_AFTER_S
    create_topic(redis_client, "orders", 2)
    poison, *parked = produce(redis_url, "orders", ["order-poison"] * 3 + ["order-ok"])[:3]
    client.force_login(viewer)

    with consuming(
        redis_url,
        "orders",
        "mailer",
        FailOn("order-poison", error="card declined"),
        ordering=Ordering.KEY,
        after_dlq=AfterDlq.HOLD,
        max_reconsume_times=0,
        retry_initial_ms=20,
        retry_max_ms=40,
    ):
        overview = probe_until(
            lambda: get_json(client, "/api/v1/overview?state=stuck"),
            lambda o: any(r["stuck"] == "held_key" for r in o["table"]["rows"]),
        )
        group = get_json(client, "/api/v1/topics/orders/groups/mailer")
        page = client.get("/topics/orders/groups/mailer").content.decode()

    overview_group = summary_group(overview, "orders", "mailer")
    assert overview_group["stuck"] >= 1
    assert group["totals"]["stuck"] == overview_group["stuck"] == len(group["stuck"])
    # The overview's stuck queues are the group page's, each with its longest stuck reason.
    stuck_rows = overview["table"]["rows"]
    first_reason = {
        (a["group"], a["queue"]): a["reason"]
        for a in sorted(group["stuck"], key=lambda a: a["since_ms"], reverse=True)
    }
    assert {(r["group"], r["queue"]): r["stuck"] for r in stuck_rows} == first_reason
    (row,) = [r for r in stuck_rows if r["queue"] == poison.queue]
    assert row["held_keys"] == 1 and row["parked"] == len(parked)
    assert (
        f"queue {poison.queue}: 1 key held behind its dead letter (order-poison), "
        f"{len(parked)} messages parked, for "
    ) in row["stuck_why"]
    (held,) = [a for a in group["stuck"] if a["reason"] == "held_key"]
    assert (held["queue"], held["key"], held["held_keys"], held["parked"]) == (
        poison.queue,
        "order-poison",
        1,
        len(parked),
    )
    assert held["for_s"] >= STUCK_AFTER_S
    assert held["why"].startswith(
        f"queue {poison.queue}: 1 key held behind its dead letter (order-poison), "
        f"{len(parked)} messages parked, for "
    )
    assert f'id="group-stuck-count" data-value="{overview_group["stuck"]}"' in page
    assert f'<tr class="stuck-queue" data-queue="{poison.queue}" data-reason="held_key">' in page
    assert ">held key</span>" in page
