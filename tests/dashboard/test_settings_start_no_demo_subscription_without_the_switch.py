"""Beside a real system, the dashboard's worker consumes nothing it was not told to: the
demo's subscriptions (groups ``mailer`` and ``billing`` on topic ``orders``) only with
``LOCKSTEP_DEMO=true``, which ``make run`` sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.dashboard.settings_probe import Refused, read_settings

DEMO = "settings.LOCKSTEP_DEMO"
GROUPS = "[[s.topic, s.group] for s in settings.LOCKSTEP_SUBSCRIPTIONS]"


def test_it_subscribes_to_nothing_by_default(tmp_path: Path) -> None:
    values = read_settings(tmp_path, [DEMO, GROUPS])

    assert values == {DEMO: False, GROUPS: []}


def test_it_subscribes_the_demo_groups_when_the_demo_is_asked_for(tmp_path: Path) -> None:
    values = read_settings(tmp_path, [DEMO, GROUPS], LOCKSTEP_DEMO="true")

    assert values == {DEMO: True, GROUPS: [["orders", "mailer"], ["orders", "billing"]]}


def test_it_prefers_the_subscriptions_it_is_given_over_the_demo(tmp_path: Path) -> None:
    given = [{"topic": "payments", "group": "ledger", "handler": "shop.handlers.ledger"}]

    values = read_settings(
        tmp_path, [GROUPS], LOCKSTEP_DEMO="true", LOCKSTEP_SUBSCRIPTIONS=json.dumps(given)
    )

    assert values[GROUPS] == [["payments", "ledger"]]


def test_it_refuses_a_demo_switch_that_is_not_a_boolean(tmp_path: Path) -> None:
    with pytest.raises(Refused, match="LOCKSTEP_DEMO must be true or false"):
        read_settings(tmp_path, [DEMO], LOCKSTEP_DEMO="sometimes")
