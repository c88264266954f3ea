"""The dead-letter tests' users (viewer, operator, admin_user with their roles), shared
rather than written again."""

from tests.dashboard.deadletters.conftest import admin_user, operator, viewer

__all__ = ["admin_user", "operator", "viewer"]
