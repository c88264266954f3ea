"""The suite's two runs (docs/testing.md, "Stores") really use their store: the PostgreSQL
run talks to the server it started itself (its port and data directory, never the
machine's service on 5432), the SQLite run to SQLite whatever the environment names."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.db import connection

from tests.postgres import SERVER_ENV, STORE_ENV, chosen_store


@pytest.mark.django_db
@pytest.mark.on_postgres(only=True)
def test_the_postgres_run_talks_to_the_server_it_started() -> None:
    private = urlsplit(os.environ[SERVER_ENV])
    with connection.cursor() as cursor:
        cursor.execute("SELECT inet_server_port(), current_setting('data_directory')")
        port, data_directory = cursor.fetchone()

    assert connection.vendor == "postgresql"
    assert port == private.port != 5432
    assert Path(data_directory).parent.name.startswith("lockstep-postgres-")
    assert connection.settings_dict["NAME"].startswith("test_lockstep")


@pytest.mark.django_db
def test_the_sqlite_run_talks_to_sqlite() -> None:
    assert connection.vendor == "sqlite"
    assert os.environ["DATABASE_URL"] == ""


def test_an_unknown_store_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STORE_ENV, "mysql")
    with pytest.raises(pytest.UsageError, match="expected one of sqlite, postgres"):
        chosen_store()
