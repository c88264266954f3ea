from __future__ import annotations

from importlib import import_module

import pytest
from django.contrib.auth.models import User

VIEWER_PASSWORD = "viewer-password-1"


@pytest.fixture
def viewer(django_user_model: type[User]) -> User:
    """A signed-up user without staff rights: may look at every page, change nothing."""
    return django_user_model.objects.create_user("viewer", password=VIEWER_PASSWORD)


@pytest.fixture
def roles(transactional_db: None) -> None:
    """The role groups and their permissions, made again as the data migrations make them:
    the flush after every transactional test removes them (``serialized_rollback`` cannot
    restore them once another transactional test ran: the flush's re-created content
    types collide with the serialized ones)."""
    from django.apps import apps

    import_module("lockstep.dashboard.deadletters.migrations.0002_roles").create_roles(apps, None)
    import_module("lockstep.dashboard.alerts.migrations.0002_roles").grant(apps, None)
    import_module("lockstep.dashboard.reports.migrations.0003_run_analytics_permission").grant(
        apps, None
    )
