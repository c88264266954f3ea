"""Where the settings file comes from: ``LOCKSTEP_ENV_FILE`` when set (it must exist),
else ``.env`` in the working directory; the environment's own variables win over it. The
shipped ``.env.example``, used as it is, gives the defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.dashboard.settings_probe import REPO, Refused, read_settings

# Each test loads the settings in a fresh interpreter (seconds of Django start-up).
pytestmark = pytest.mark.slow

FILE = "settings.LOCKSTEP_ENV_FILE"
QUEUE = "settings.LOCKSTEP_CELERY_QUEUE"
URL = "settings.LOCKSTEP_BASE_URL"


def test_it_reads_dot_env_in_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("LOCKSTEP_CELERY_QUEUE=from-dot-env\n")

    values = read_settings(tmp_path, [FILE, QUEUE])

    assert values == {FILE: str(tmp_path / ".env"), QUEUE: "from-dot-env"}


def test_it_reads_the_file_lockstep_env_file_names_instead(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("LOCKSTEP_CELERY_QUEUE=from-dot-env\n")
    named = tmp_path / "etc" / "lockstep.env"
    named.parent.mkdir()
    named.write_text("LOCKSTEP_CELERY_QUEUE=from-named\nLOCKSTEP_BASE_URL=https://ops.example\n")

    values = read_settings(tmp_path, [FILE, QUEUE, URL], LOCKSTEP_ENV_FILE="etc/lockstep.env")

    assert values == {FILE: str(named), QUEUE: "from-named", URL: "https://ops.example"}


def test_the_environment_wins_over_the_file(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("LOCKSTEP_CELERY_QUEUE=from-dot-env\n")

    assert read_settings(tmp_path, [QUEUE], LOCKSTEP_CELERY_QUEUE="from-env") == {QUEUE: "from-env"}


def test_it_reads_no_file_when_there_is_none(tmp_path: Path) -> None:
    assert read_settings(tmp_path, [FILE, QUEUE]) == {FILE: "", QUEUE: "lockstep"}


def test_it_refuses_a_named_file_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(Refused, match=r"LOCKSTEP_ENV_FILE names .*missing\.env, which is not a"):
        read_settings(tmp_path, [FILE], LOCKSTEP_ENV_FILE=str(tmp_path / "missing.env"))


def test_the_shipped_example_gives_the_defaults(tmp_path: Path) -> None:
    exprs = [
        "[s.group for s in settings.LOCKSTEP_SUBSCRIPTIONS]",
        "settings.LOCKSTEP_DEMO",
        QUEUE,
        "settings.DATABASES['default']['NAME']",
        "settings.LOCKSTEP_ANALYTICS_URI",
    ]

    values = read_settings(
        tmp_path,
        exprs,
        LOCKSTEP_ENV_FILE=str(REPO / ".env.example"),
        LOCKSTEP_DATA_DIR=str(tmp_path / "data"),
    )

    assert list(values.values()) == [
        [],
        False,
        "lockstep",
        str(tmp_path / "data" / "db.sqlite3"),
        str(tmp_path / "data" / "analytics"),
    ]
