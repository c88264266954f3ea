"""The alert pages' users: the role fixtures of the dead-letter tests (viewer, operator,
admin_user), shared rather than written again."""

from tests.dashboard.deadletters.conftest import admin_user, operator, viewer

__all__ = ["admin_user", "operator", "viewer"]
