"""``manage.py alerts list``: newest first, filtered by state, as text or JSON with the
documented fields; bad options are refused with a clear error."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from lockstep.dashboard.alerts import lifecycle
from tests.dashboard.alerts.findings import later, stuck

pytestmark = pytest.mark.django_db

FIELDS = {
    "id",
    "rule",
    "state",
    "severity",
    "topic",
    "group",
    "queue",
    "key",
    "consumer",
    "offset",
    "opened_at",
    "resolved_at",
    "summary",
}


def listed(*args: str) -> str:
    out = StringIO()
    call_command("alerts", "list", *args, stdout=out)
    return out.getvalue()


def test_it_lists_alerts_as_json_filtered_by_state() -> None:
    lifecycle.apply([stuck(queue=1), stuck(queue=2)], {"queue_stuck"}, later(0))
    lifecycle.apply([stuck(queue=2)], {"queue_stuck"}, later(5))

    everything = json.loads(listed("--json"))
    # Both opened at the same tick: the later id first.
    assert [(a["queue"], a["state"]) for a in everything] == [(2, "open"), (1, "resolved")]
    assert all(set(a) == FIELDS for a in everything)
    (resolved,) = json.loads(listed("--state", "resolved", "--json"))
    assert (resolved["queue"], resolved["rule"], resolved["offset"]) == (1, "queue_stuck", 41)
    assert resolved["resolved_at"] is not None
    (still_open,) = json.loads(listed("--state", "open", "--json"))
    assert still_open["queue"] == 2 and still_open["resolved_at"] is None
    assert "orders / billing / queue 2 is stuck" in listed("--state", "open")


def test_it_refuses_an_unknown_state_and_a_bad_limit() -> None:
    with pytest.raises(CommandError, match="invalid choice"):
        listed("--state", "closed")
    with pytest.raises(CommandError, match="at least 1"):
        listed("--limit", "0")
