"""The tests of
``tests/dashboard/test_api_overview_stats.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.test_api_overview_stats import (
    pytestmark,
    test_it_computes_rates_retries_and_stuck_queues_from_the_history,
    test_it_counts_the_dead_letters_and_retries_the_runtime_left,
    test_it_has_no_rate_in_without_lag_samples,
    test_it_raises_a_stuck_alert_for_a_key_blocked_too_long,
)

__all__ = [
    "pytestmark",
    "test_it_computes_rates_retries_and_stuck_queues_from_the_history",
    "test_it_counts_the_dead_letters_and_retries_the_runtime_left",
    "test_it_has_no_rate_in_without_lag_samples",
    "test_it_raises_a_stuck_alert_for_a_key_blocked_too_long",
]
