"""The alert tests' users (the dead-letter tests' role fixtures), shared rather than
written again."""

from tests.dashboard.alerts.conftest import admin_user, operator, viewer

__all__ = ["admin_user", "operator", "viewer"]
