"""A rule's parameters come from the settings, overridden per topic and/or group; the
most specific override wins (its on/off too); a bad stored value keeps the default."""

from __future__ import annotations

from typing import Any

import pytest

from lockstep.dashboard.alerts.models import RuleSetting
from lockstep.dashboard.alerts.rules import RULES
from lockstep.dashboard.alerts.thresholds import Thresholds

pytestmark = pytest.mark.django_db


def test_the_most_specific_override_wins(settings: Any) -> None:
    settings.LOCKSTEP_ALERT_UNOWNED_AFTER_SECONDS = 60
    RuleSetting.objects.create(rule="queue_unowned", topic="orders", params={"after_s": 30})
    RuleSetting.objects.create(rule="queue_unowned", group="billing", params={"after_s": 20})
    RuleSetting.objects.create(
        rule="queue_unowned", topic="orders", group="billing", params={"after_s": 10}
    )
    RuleSetting.objects.create(rule="queue_unowned", topic="audit", enabled=False)
    RuleSetting.objects.create(
        rule="queue_unowned", topic="audit", group="ledger", params={"after_s": 5}
    )
    t = Thresholds.load()
    assert t("queue_unowned", "orders", "billing") == {"after_s": 10}
    assert t("queue_unowned", "orders", "mailer") == {"after_s": 30}
    assert t("queue_unowned", "payments", "billing") == {"after_s": 20}
    assert t("queue_unowned", "payments", "mailer") == {"after_s": 60}
    assert t("queue_unowned", "audit", "mailer") is None
    assert t("queue_unowned", "audit", "ledger") == {"after_s": 5}


def test_queue_stuck_has_no_threshold_of_its_own_but_may_be_switched_off() -> None:
    """Stuck has one threshold, LOCKSTEP_STUCK_AFTER_SECONDS (docs/stuck.md): an override
    may switch the alert off, never make it say "stuck" sooner or later than the pages."""
    RuleSetting.objects.create(rule="queue_stuck", topic="orders", params={"after_s": 5})
    RuleSetting.objects.create(rule="queue_stuck", topic="audit", enabled=False)
    t = Thresholds.load()
    assert t("queue_stuck", "orders", "billing") == {}
    assert t("queue_stuck", "audit", "billing") is None


def test_a_bad_stored_value_keeps_the_default(settings: Any) -> None:
    settings.LOCKSTEP_ALERT_FLAPPING_CHANGES = 6
    RuleSetting.objects.create(
        rule="lock_flapping", params={"changes": "many", "window_s": 120, "unknown": 1}
    )
    assert Thresholds.load()("lock_flapping", "orders", "billing") == {
        "changes": 6,
        "window_s": 120,
    }


def test_params_refuse_what_is_not_a_usable_number() -> None:
    (retries,) = RULES["message_blocked"].params
    assert retries.parse("7") == 7
    for bad, message in (
        ("x", "not a number"),
        ("0", "at least 1"),
        ("2.5", "whole"),
        ("nan", "finite"),
    ):
        with pytest.raises(ValueError, match=message):
            retries.parse(bad)
