"""Redis lost in the middle of a request: the request still finishes (nothing is left
``running`` or ``replay_pending``): what was done is recorded, the rest is skipped with
the reason and its records are ``dead`` again, and the audit entry says so."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import redis

from lockstep.dashboard.deadletters import actions
from lockstep.dashboard.deadletters.models import AuditEntry, DeadLetter, Status
from lockstep.dashboard.deadletters.plans import Selection
from lockstep.dashboard.deadletters.sync import sync_all
from tests.dashboard.deadletters.action_helpers import GROUP, fill
from tests.support import redis_server

pytestmark = pytest.mark.django_db


def test_it_finishes_the_request_when_redis_goes_away_midway(settings: Any) -> None:
    with redis_server() as url:
        client = redis.Redis.from_url(url)
        settings.REDIS_URL = url
        fill(client, keys_count=3, per_key=4)
        sync_all(client)
        actions.submit("operator", GROUP, "replay", "outage-run-1", Selection.of_filter({}))
        # 12 messages at 20 a second: Redis goes away after about 6 of them.
        stop = threading.Timer(0.3, lambda: client.shutdown(nosave=True))
        stop.start()

        request = actions.run("outage-run-1", per_second=20)
        stop.join()

    assert request is not None
    assert (request.state, request.done, request.total) == ("done", 12, 12)
    outcomes = AuditEntry.objects.get(action="replay").outcomes
    assert set(outcomes) <= {"republished", "failed", "skipped"}
    assert 0 < outcomes.get("republished", 0) < 12
    assert outcomes["skipped"] > 0 and sum(outcomes.values()) == 12
    skipped = request.items.filter(outcome="skipped")
    assert {i.detail.split(" (")[0] for i in skipped} == {
        "not attempted: Redis failed during the request"
    }
    statuses = {s: DeadLetter.objects.filter(status=s).count() for s in Status.values}
    assert statuses[Status.REPLAY_PENDING] == 0
    assert statuses[Status.REPLAYED] == outcomes["republished"]
    assert statuses[Status.DEAD] == 12 - outcomes["republished"]
