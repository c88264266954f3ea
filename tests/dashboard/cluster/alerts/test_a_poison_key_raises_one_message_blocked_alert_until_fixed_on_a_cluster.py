"""The tests of
``tests/dashboard/alerts/test_a_poison_key_raises_one_message_blocked_alert_until_fixed.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.alerts.test_a_poison_key_raises_one_message_blocked_alert_until_fixed import (
    pytestmark,
    test_it_raises_one_message_blocked_alert_and_resolves_it_after_the_fix,
)

__all__ = [
    "pytestmark",
    "test_it_raises_one_message_blocked_alert_and_resolves_it_after_the_fix",
]
