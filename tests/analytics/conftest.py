from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from pyspark.sql import SparkSession

from lockstep.analytics.session import SessionOptions, build_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One real local Spark for the whole run: starting a JVM costs seconds, and
    ``run_analytics`` reuses this active session instead of starting its own."""
    session = build_session("local[2]", "lockstep-tests", SessionOptions(shuffle_partitions=2))
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def analytics_uri(settings: Any, tmp_path: Any) -> str:
    """The data set lives in a per-test folder, never in the project's var/."""
    settings.LOCKSTEP_ANALYTICS_URI = str(tmp_path / "analytics")
    return str(settings.LOCKSTEP_ANALYTICS_URI)


@pytest.fixture
def viewer(django_user_model: Any) -> Any:
    """A logged-in operator who may look at reports."""
    return django_user_model.objects.create_user("vera")  # no password: force_login only


@pytest.fixture
def viewer_client(client: Client, viewer: Any) -> Client:
    client.force_login(viewer)
    return client
