"""Everything the dashboard writes (SQLite database, analytics data set, collected static
files) goes under one folder, ``LOCKSTEP_DATA_DIR``; unset, the per-user data folder of
command-line tools (``$XDG_DATA_HOME/lockstep``, else ``~/.local/share/lockstep``). A
folder inside the installed package is refused, and reading the settings creates
nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.dashboard.settings_probe import REPO, Refused, read_settings

# Each test loads the settings in a fresh interpreter (seconds of Django start-up).
pytestmark = pytest.mark.slow

DATA = "str(settings.LOCKSTEP_DATA_DIR)"
DB = "settings.DATABASES['default']['NAME']"
ENGINE = "settings.DATABASES['default']['ENGINE']"
ANALYTICS = "settings.LOCKSTEP_ANALYTICS_URI"
STATIC = "str(settings.STATIC_ROOT)"
PLACES = [DATA, DB, ANALYTICS, STATIC]


def _places_under(folder: Path) -> dict[str, object]:
    return {
        DATA: str(folder),
        DB: str(folder / "db.sqlite3"),
        ANALYTICS: str(folder / "analytics"),
        STATIC: str(folder / "staticfiles"),
    }


def test_it_puts_the_database_analytics_and_static_files_under_the_data_dir(
    tmp_path: Path,
) -> None:
    data = tmp_path / "lockstep-data"

    assert read_settings(tmp_path, PLACES, LOCKSTEP_DATA_DIR=str(data)) == _places_under(data)
    assert not data.exists()  # reading the settings wrote nothing


def test_it_defaults_to_the_xdg_data_home_then_to_the_home_folder(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"

    assert read_settings(tmp_path, PLACES, XDG_DATA_HOME=str(xdg)) == _places_under(
        xdg / "lockstep"
    )
    home_default = tmp_path / "home" / ".local" / "share" / "lockstep"
    assert read_settings(tmp_path, PLACES) == _places_under(home_default)
    # A relative XDG_DATA_HOME is ignored, as the XDG Base Directory specification says.
    assert read_settings(tmp_path, [DATA], XDG_DATA_HOME="relative/xdg") == {
        DATA: str(home_default)
    }
    assert not (tmp_path / "home" / ".local").exists()


def test_it_takes_a_relative_data_dir_from_the_working_directory(tmp_path: Path) -> None:
    values = read_settings(tmp_path, [DATA, ANALYTICS], LOCKSTEP_DATA_DIR="var")

    assert values == {DATA: str(tmp_path / "var"), ANALYTICS: str(tmp_path / "var" / "analytics")}


def test_it_takes_a_relative_analytics_path_from_the_data_dir(tmp_path: Path) -> None:
    values = read_settings(
        tmp_path, [ANALYTICS], LOCKSTEP_DATA_DIR=str(tmp_path), LOCKSTEP_ANALYTICS_URI="parquet"
    )

    assert values == {ANALYTICS: str(tmp_path / "parquet")}


def test_it_keeps_a_database_url_and_an_analytics_uri_that_are_given(tmp_path: Path) -> None:
    values = read_settings(
        tmp_path,
        [ENGINE, DB, ANALYTICS],
        LOCKSTEP_DATA_DIR=str(tmp_path / "data"),
        DATABASE_URL="postgres://lockstep:secret@db.internal:5432/lockstep",
        LOCKSTEP_ANALYTICS_URI="s3a://bucket/lockstep",
    )

    assert values == {
        ENGINE: "django.db.backends.postgresql",
        DB: "lockstep",
        ANALYTICS: "s3a://bucket/lockstep",
    }


def test_it_takes_an_empty_database_url_as_the_default(tmp_path: Path) -> None:
    values = read_settings(tmp_path, [DB], LOCKSTEP_DATA_DIR=str(tmp_path), DATABASE_URL="")

    assert values == {DB: str(tmp_path / "db.sqlite3")}


@pytest.mark.parametrize(
    "inside",
    [
        REPO / "lockstep",
        REPO / "lockstep" / "data",
        # In a checkout the package links to the top-level folders: those count too.
        REPO / "dashboard" / "data",
        REPO / "lockstep" / "dashboard" / "static" / "data",
    ],
    ids=["the-package", "below-it", "a-linked-folder", "below-a-link"],
)
def test_it_refuses_a_data_dir_inside_the_package(tmp_path: Path, inside: Path) -> None:
    existed = inside.exists()

    with pytest.raises(Refused, match="LOCKSTEP_DATA_DIR must not be inside the installed"):
        read_settings(tmp_path, [DATA], LOCKSTEP_DATA_DIR=str(inside))
    assert inside.exists() == existed


def test_it_accepts_the_checkouts_var_folder_beside_the_package(tmp_path: Path) -> None:
    # What `make run` sets.
    assert read_settings(tmp_path, [DATA], LOCKSTEP_DATA_DIR=str(REPO / "var")) == {
        DATA: str(REPO / "var")
    }
