"""The alert pages' users: the role fixtures of the dead-letter tests (viewer, operator,
admin_user), shared rather than written again; and ``without_group_delays`` for the
tests of one alert's lifecycle."""

from typing import Any

import pytest

from tests.dashboard.deadletters.conftest import admin_user, operator, viewer

__all__ = ["admin_user", "operator", "viewer", "without_group_delays"]


@pytest.fixture
def without_group_delays(settings: Any) -> None:
    """Group wait and group interval 0: each ``lifecycle.apply`` tells what changed at
    once, so a test of one alert's lifecycle (open, re-notify, silence, resolve) reads
    its notifications tick by tick. The grouping has its own tests
    (``test_a_storm_is_told_once_per_group_interval``)."""
    settings.LOCKSTEP_ALERT_GROUP_WAIT_SECONDS = 0
    settings.LOCKSTEP_ALERT_GROUP_INTERVAL_SECONDS = 0
