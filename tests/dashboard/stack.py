"""The real web stack for browser tests: daphne and the event ingester as subprocesses
(as ``bin/run`` starts them) on a throw-away database, and headless Chromium.

Browser test modules build their module-scoped fixtures from ``running_site`` and
``chromium``; screenshots go to ``test-artifacts/`` at the repository root."""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import redis
from playwright.sync_api import Browser, Frame, Page, sync_playwright

from tests.postgres import create_database, database_url, server_url
from tests.support import free_port

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
USER, PASSWORD = "operator", "operator-password-1"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless=new",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# A page's waits are on states; on a machine where four workers share two cores, a state
# that takes a second here can take ten there.
TIMEOUT_MS = 30_000


def site_env(redis_url: str, workdir: Path, **extra: str) -> dict[str, str]:
    """The environment every web-side process of a test shares: the suite's Redis, a
    database of its own (``site_database_url``), and every file the processes write in
    ``workdir``."""
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "DJANGO_SETTINGS_MODULE": "lockstep.dashboard.settings",
        "REDIS_URL": redis_url,
        "CHANNELS_REDIS_URL": redis_url,
        "CELERY_BROKER_URL": redis_url,
        "DATABASE_URL": site_database_url(workdir),
        "LOCKSTEP_DATA_DIR": str(workdir),
        "LOCKSTEP_PUSH_INTERVAL": "0.2",
        "LOG_LEVEL": "WARNING",
        **extra,
    }


def site_database_url(workdir: Path) -> str:
    """A database no other site uses, not yet created (``Site.migrate`` makes it): the
    file ``workdir/db.sqlite3``, or on the PostgreSQL run (tests/postgres.py) a new
    database of the private server at each call, named after ``workdir`` (a test's own
    folder) and made unique (xdist's workers give their tests' folders the same names)."""
    server = server_url()
    if server is None:
        return f"sqlite:///{workdir / 'db.sqlite3'}"
    # PostgreSQL folds names to lower case and keeps 63 bytes of them.
    folder = re.sub(r"[^a-z0-9]+", "_", workdir.name.lower())[-40:]
    return database_url(server, f"site_{folder}_{uuid.uuid4().hex[:8]}")


class Site:
    """The web side as separate processes sharing one environment; each can be stopped
    (SIGTERM), killed (SIGKILL) and started again (same port) to test what happens
    meanwhile. Output goes to ``<logs>/<name>.log``."""

    def __init__(self, env: dict[str, str], port: int, logs: Path) -> None:
        self.env = env
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.logs = logs
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stderr}")
        return done.stdout

    def migrate(self) -> None:
        """The site's database as ``manage.py migrate`` leaves it: a copy of one database
        migrated once per test process (a migration costs its process seconds of CPU, and
        gives the same database every time)."""
        copy_database(_migrated_template(), self.env["DATABASE_URL"])

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        commands = {
            "web": [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "lockstep.dashboard.asgi:application",
            ],
            "ingester": [sys.executable, "manage.py", "ingest_events", *args],
            # Runs bulk replays and discards (no beat: tests sync with ``manage.py dlq``).
            "celery": [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "lockstep.dashboard.celery",
                "worker",
                "--pool",
                "solo",
                "--loglevel",
                "WARNING",
                "-n",
                f"lockstep-test-{self.port}@%h",
                *args,
            ],
        }
        with open(self.logs / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(
                commands[name], cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        self.procs[name] = proc
        if name == "web":
            self._wait_for_http()
        return proc

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.kill()
        proc.wait(10)

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.stop(name)

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _wait_for_http(self) -> None:
        # Daphne's start-up (Django and its apps) and its first page take seconds, many
        # more on a loaded machine: a first answer slower than a try's timeout is retried.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.procs["web"].poll() is not None:
                raise RuntimeError(f"daphne exited:\n{self.log('web')}")
            try:
                with urllib.request.urlopen(f"{self.url}/login/", timeout=5) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.1)
        raise RuntimeError(f"daphne did not answer:\n{self.log('web')}")


def copy_database(source: str, target: str) -> None:
    """Make database ``target`` a copy of ``source`` (both URLs of ``site_database_url``,
    the source unused meanwhile): a file copy, or PostgreSQL's ``CREATE DATABASE …
    TEMPLATE``."""
    if source.startswith("sqlite:///"):
        shutil.copyfile(source.removeprefix("sqlite://"), target.removeprefix("sqlite://"))
        return
    server = server_url()
    assert server is not None, "a PostgreSQL database outside the PostgreSQL run"
    create_database(server, _name(target), template=_name(source))


def _name(url: str) -> str:
    return urlsplit(url).path.removeprefix("/")


@functools.cache
def _migrated_template() -> str:
    """The URL of a database ``manage.py migrate`` made, in a folder removed when the
    process exits (on the PostgreSQL run, on the private server, which goes with the run)."""
    folder = Path(tempfile.mkdtemp(prefix="lockstep-migrated-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    site = Site(site_env("redis://127.0.0.1:1", folder), 0, folder)  # migrate needs no Redis
    url = site.env["DATABASE_URL"]
    server = server_url()
    if server is not None:
        create_database(server, _name(url))
    site.manage("migrate", "--noinput")
    return url


@contextmanager
def running_site(
    redis_url: str, workdir: Path, topics: dict[str, int], **extra_env: str
) -> Iterator[Site]:
    """A flushed Redis with ``topics`` (name -> queue count), a migrated database with the
    demo admin (``USER`` / ``PASSWORD``), then daphne and the ingester; stopped after.
    ``extra_env`` is added to every process's environment."""
    client = redis.Redis.from_url(redis_url)
    client.flushall()
    env = site_env(
        redis_url, workdir, DEMO_ADMIN_USER=USER, DEMO_ADMIN_PASSWORD=PASSWORD, **extra_env
    )
    site = Site(env, free_port(), workdir)
    site.migrate()
    site.manage("bootstrap_demo")
    from lockstep.workers import create_topic

    for name, queues in topics.items():
        create_topic(client, name, queues)
    try:
        site.start("web")
        site.start("ingester")
        yield site
    finally:
        site.stop_all()
        client.close()


@contextmanager
def chromium() -> Iterator[Browser]:
    """Headless Chromium from the system (no browser download)."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


def tab(browser: Browser, width: int = 1400, scheme: str = "light", height: int = 900) -> Page:
    """A new tab (a context of its own) at ``width`` x ``height`` in colour ``scheme``,
    waiting up to ``TIMEOUT_MS`` for each state; log it in with ``log_in``."""
    context = browser.new_context(
        viewport={"width": width, "height": height},
        color_scheme=scheme,  # type: ignore[arg-type]
    )
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    return page


def log_in(
    page: Page,
    site: Site,
    path: str = "/",
    screenshot: str = "",
    user: str = USER,
    password: str = PASSWORD,
) -> None:
    """Open ``path``, get sent to the login form, log in (as the demo admin unless
    ``user`` is given), land on it."""
    page.goto(f"{site.url}{path}")
    assert page.url.startswith(f"{site.url}/login/")
    if screenshot:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / screenshot))
    page.fill("#id_username", user)
    page.fill("#id_password", password)
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert page.url == f"{site.url}{path}"


class Navigations:
    """Counts main-frame navigations from now on; a live page should cause none."""

    def __init__(self, page: Page) -> None:
        self.count = 0
        page.evaluate("window.__marker = 'no reload since'")
        page.on("framenavigated", self._seen)
        self.page = page

    def _seen(self, frame: Frame) -> None:
        if frame == self.page.main_frame:
            self.count += 1

    def assert_none(self) -> None:
        assert self.count == 0
        assert self.page.evaluate("window.__marker") == "no reload since"
