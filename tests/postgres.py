"""The PostgreSQL run (docs/testing.md, "Stores"): a private PostgreSQL server, and the
pytest plugin that runs the tests marked ``on_postgres`` on it.

``LOCKSTEP_TEST_STORE=postgres`` makes the run start its own server (``initdb`` and
``pg_ctl`` of Debian's ``postgresql`` package, trust authentication, on a free port of
127.0.0.1, in a temporary folder; never the machine's service), point ``DATABASE_URL`` at
it, and keep only the tests marked ``on_postgres`` (their ``[standalone]`` Redis case: the
Redis backend does not change with the store). Unset or ``sqlite``, the run is the
SQLite run: ``DATABASE_URL`` is emptied, so neither the environment nor a ``.env`` file
can point the suite at a database of the machine.

This is a plugin (``-p tests.postgres`` in pyproject's ``addopts``), not part of
``tests/conftest.py``: pytest-django reads the settings, and with them ``DATABASES`` from
``DATABASE_URL``, before any conftest.py is imported."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

from tests.support import free_port

STORE_ENV = "LOCKSTEP_TEST_STORE"
STORES = ("sqlite", "postgres")
# The private server's URL (its ``postgres`` database): set by the process that started
# the server, inherited by pytest-xdist's workers and every process the tests start.
SERVER_ENV = "LOCKSTEP_TEST_POSTGRES_URL"
# What DATABASE_URL names on the PostgreSQL run. Never created: pytest-django makes
# ``test_lockstep`` (``test_lockstep_gw<N>`` per xdist worker) beside it, and a process
# that would read this one instead of its test's database fails instead of sharing it.
DATABASE = "lockstep"
# A throw-away server: nothing it writes has to survive a crash of the machine, and the
# suite creates, migrates and flushes databases all run long.
SPEED_OVER_DURABILITY = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")
# initdb refuses to run as root: as root the server runs as the first of these that exists.
SERVER_USERS = ("postgres", "nobody")
_SERVER_KEY = pytest.StashKey["PostgresServer"]()


def chosen_store() -> str:
    """The store this run's Django tests use, from ``LOCKSTEP_TEST_STORE`` (``sqlite`` when
    unset); any other value is a usage error, not a silent SQLite run."""
    store = os.environ.get(STORE_ENV, "").strip() or "sqlite"
    if store not in STORES:
        raise pytest.UsageError(f"{STORE_ENV}={store!r}: expected one of {', '.join(STORES)}")
    return store


def server_url() -> str | None:
    """The private server's URL on the PostgreSQL run (its ``postgres`` database), or None
    on the SQLite run."""
    return os.environ.get(SERVER_ENV) or None


def database_url(server: str, name: str) -> str:
    """``server``'s URL naming database ``name`` instead."""
    return urlunsplit(urlsplit(server)._replace(path=f"/{name}"))


def create_database(server: str, name: str, template: str | None = None) -> str:
    """Create database ``name`` on ``server`` (a copy of database ``template`` when given,
    which no session may be using meanwhile); return its URL."""
    statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
    # CREATE DATABASE cannot run inside a transaction block.
    with psycopg.connect(server, autocommit=True) as db:
        db.execute(statement)
    return database_url(server, name)


@dataclass(frozen=True)
class PostgresServer:
    """A running private server: ``url`` names its ``postgres`` database, ``folder`` holds
    its data directory, log and socket."""

    url: str
    folder: Path
    user: str | None  # who runs it when the suite runs as root; None: the suite's user

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def stop(self) -> None:
        """Stop the server at once (it holds nothing to keep) and remove its folder."""
        _run_as(self.user, [_binary("pg_ctl"), "stop", "-D", str(self.data), "-m", "immediate"])
        shutil.rmtree(self.folder, ignore_errors=True)


def start_postgres() -> PostgresServer:
    """initdb and start a PostgreSQL server on a free port of 127.0.0.1 in a new temporary
    folder (its Unix socket there too, never in the system's socket folder); return once
    it accepts connections. The caller stops it (``PostgresServer.stop``)."""
    folder = Path(tempfile.mkdtemp(prefix="lockstep-postgres-"))
    user = _server_user()
    if user is not None:
        account = pwd.getpwnam(user)
        os.chown(folder, account.pw_uid, account.pw_gid)
    port = free_port()
    try:
        _run_as(user, _initdb(folder / "data"))
        _run_as(user, _pg_ctl_start(folder, port))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return PostgresServer(f"postgresql://postgres@127.0.0.1:{port}/postgres", folder, user)


def _initdb(data: Path) -> list[str]:
    """A cluster whose superuser ``postgres`` any local connection may be, in UTF-8, with
    the C locale: text sorts by its bytes, as SQLite sorts it."""
    return [
        *(_binary("initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"),
        *("--encoding=UTF8", "--no-locale", "--no-sync", "--no-instructions"),
    ]


def _pg_ctl_start(folder: Path, port: int) -> list[str]:
    """Start the cluster in ``folder/data`` on ``port``, logging to ``folder/server.log``,
    and wait until it accepts connections."""
    options = [f"-p {port}", "-c listen_addresses=127.0.0.1"]
    options += [f"-c unix_socket_directories={folder}"]
    options += [f"-c {setting}" for setting in SPEED_OVER_DURABILITY]
    return [
        *(_binary("pg_ctl"), "start", "-w", "-t", "60", "-D", str(folder / "data")),
        *("-l", str(folder / "server.log"), "-o", " ".join(options)),
    ]


def _binary(name: str) -> str:
    """A server program of the newest PostgreSQL installed: Debian keeps them out of PATH,
    under /usr/lib/postgresql/<major>/bin."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=_major_version)
    path = found[-1] if found else shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} is not installed; run `make test` (it installs postgresql)")
    return path


def _major_version(path: str) -> int:
    """The ``<major>`` of ``/usr/lib/postgresql/<major>/bin/<program>`` (0 if not a number)."""
    major = Path(path).parts[-3]
    return int(major) if major.isdigit() else 0


def _server_user() -> str | None:
    """The account the server runs as when the suite runs as root (initdb refuses root);
    None when the suite's own user may run it."""
    if os.geteuid() != 0:
        return None
    for name in SERVER_USERS:
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise RuntimeError(f"running as root, and none of {SERVER_USERS} exists to run PostgreSQL")


def _run_as(user: str | None, command: list[str]) -> None:
    """Run ``command`` (as ``user`` when given); fail with its output if it fails."""
    if user is not None:
        command = ["runuser", "-u", user, "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd="/")
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> Iterator[None]:
    """Before pytest-django reads the settings: on the PostgreSQL run, start the private
    server unless this process inherited one (a pytest-xdist worker of the process that
    started it), and name it in ``DATABASE_URL``; on the SQLite run, empty ``DATABASE_URL``
    (the settings' default SQLite, which pytest-django replaces with its test database)."""
    if chosen_store() == "postgres":
        url = server_url()
        if url is None or "PYTEST_XDIST_WORKER" not in os.environ:
            server = start_postgres()
            early_config.stash[_SERVER_KEY] = server
            os.environ[SERVER_ENV] = url = server.url
        os.environ["DATABASE_URL"] = database_url(url, DATABASE)
    else:
        os.environ.pop(SERVER_ENV, None)
        os.environ["DATABASE_URL"] = ""
    try:
        return (yield)
    except BaseException:
        pytest_unconfigure(early_config)  # pytest never configured: it will not call it
        raise


def pytest_report_header(config: pytest.Config) -> str:
    server = server_url()
    return f"store: {chosen_store()}" + (f" ({server})" if server else "")


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    """The PostgreSQL run does not import a test module that never names ``on_postgres``
    (so a test joins it by a marker in its own module): collecting the whole suite costs
    each worker seconds of CPU, for a run of a few modules."""
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    if chosen_store() != "postgres":
        return None
    return "on_postgres" not in collection_path.read_text(encoding="utf-8") or None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The PostgreSQL run keeps the tests marked ``on_postgres``, in their ``[standalone]``
    case; the SQLite run leaves out those marked ``on_postgres(only=True)``. Last, so the
    ``cluster`` marker tests/conftest.py adds is there."""
    on_postgres = chosen_store() == "postgres"
    kept: list[pytest.Item] = []
    left_out: list[pytest.Item] = []
    for item in items:
        (kept if _runs_here(item, on_postgres) else left_out).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept


def _runs_here(item: pytest.Item, on_postgres: bool) -> bool:
    marker = item.get_closest_marker("on_postgres")
    if marker is not None and (marker.args or set(marker.kwargs) - {"only"}):
        raise ValueError(f"{item.nodeid}: on_postgres takes only `only=True`")
    if not on_postgres:
        return marker is None or not marker.kwargs.get("only")
    return marker is not None and item.get_closest_marker("cluster") is None


def pytest_unconfigure(config: pytest.Config) -> None:
    """The process that started the server stops it, once every worker is done."""
    server = config.stash.get(_SERVER_KEY, None)
    if server is not None:
        del config.stash[_SERVER_KEY]
        server.stop()
