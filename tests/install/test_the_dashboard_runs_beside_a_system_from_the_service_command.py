"""`pip install 'lockstep[dashboard]'`, then `lockstep dashboard` beside a system that
already runs Redis and its own Celery workers (docs/dashboard-service.md).

The wheel's console script starts in an empty working directory with nothing of the
checkout on its path, its data in a temporary LOCKSTEP_DATA_DIR and a private
redis-server that is also the Celery broker. That system has its own topic ``orders``
and its own Celery worker (a plain app written here, on Celery's default queue) running
before the dashboard starts. The dashboard must serve a group's queues and lag, start no
demo subscription (nothing touches ``orders``), send its tasks only to its own queue (the
foreign worker receives none and keeps running its own), run its periodic tasks, and
stop with everything on SIGTERM, exit status 0."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.cookiejar import CookieJar
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis

from lockstep import create_topic
from lockstep.workers.events import read_all_events
from lockstep.workers.inspect.consumers import consumers
from tests.dashboard.helpers import per_queue, produce, running_consumer
from tests.support import free_port, probe_until, redis_server

if TYPE_CHECKING:
    from tests.install.conftest import InstallVenv, Venv

# The [dashboard] environment is installed once per session; this test's own part takes
# about half a minute.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

USER, PASSWORD = "ops", "ops-password-for-the-test-1"
TOPIC, GROUP, QUEUES = "payments", "shipping", 4
SHOP_APP = '''"""A system's own Celery app: a plain one, on Celery's default queue."""
import os
from pathlib import Path

from celery import Celery

app = Celery("shop", broker=os.environ["SHOP_BROKER_URL"])


@app.task(name="shop.touch")
def touch(path: str) -> None:
    Path(path).write_text("done")
'''


class Process:
    """A process of the test with its output in a file, read while it runs."""

    def __init__(self, command: list[str], log: Path, **kwargs: Any) -> None:
        self.log = log
        with log.open("wb") as out:
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, **kwargs)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        """The first match of ``pattern`` in the output, waiting for it."""
        found = probe_until(
            lambda: re.search(pattern, self.output()) or self.proc.poll(),
            lambda seen: seen is not None,
            timeout=timeout,
            interval=0.2,
        )
        assert isinstance(found, re.Match), f"no {pattern!r} in:\n{self.output()[-4000:]}"
        return found

    def stop(self, timeout: float = 60) -> int | None:
        """SIGTERM, then its exit status (None if it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            return None


class Session:
    """A logged-in browser session, over plain HTTP."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))

    def log_in(self, user: str, password: str) -> None:
        form = self.opener.open(f"{self.url}/login/", timeout=10).read().decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
        assert token is not None, form
        data = {"username": user, "password": password, "csrfmiddlewaretoken": token[1]}
        request = urllib.request.Request(
            f"{self.url}/login/",
            data=urllib.parse.urlencode(data).encode(),
            headers={"Referer": f"{self.url}/login/"},
        )
        with self.opener.open(request, timeout=10) as response:
            assert not response.url.endswith("/login/"), "the login was refused"

    def get(self, path: str) -> tuple[int, bytes]:
        try:
            with self.opener.open(f"{self.url}{path}", timeout=10) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()


@contextmanager
def shop_worker(venv: Venv, tmp: Path, broker_url: str) -> Iterator[tuple[Process, dict[str, str]]]:
    """The system's own Celery worker (``shop``, default queue), consuming when yielded
    (it ran one of its own tasks), with the environment its task senders use."""
    code = tmp / "shop-code"
    code.mkdir()
    (code / "shop.py").write_text(SHOP_APP)
    env = venv.env(PYTHONPATH=str(code), SHOP_BROKER_URL=broker_url)
    command = [str(venv.python), "-m", "celery", "-A", "shop", "worker", "--pool", "solo"]
    command += ["--loglevel", "INFO", "-n", "shop@%h"]
    worker = Process(command, tmp / "shop-worker.log", cwd=code, env=env)
    try:
        _run_a_shop_task(venv, code, env, tmp / "first-task.done")
        yield worker, env
    finally:
        worker.stop()


def _run_a_shop_task(venv: Venv, code: Path, env: dict[str, str], done: Path) -> None:
    sent = venv.run("-c", f"import shop; shop.touch.delay({str(done)!r})", cwd=code, env=env)
    assert sent.returncode == 0, sent.stderr
    assert probe_until(done.exists, bool, timeout=60), "the shop's worker did not run its task"


def _service_env(venv: Venv, **extra: str) -> dict[str, str]:
    """The venv's environment without the suite's own Lockstep, database and Celery
    settings (the defaults are what is tested), plus ``extra``."""
    cleared = ("LOCKSTEP_", "DATABASE_URL", "CELERY_", "CHANNELS_", "REDIS_URL", "XDG_")
    env = {k: v for k, v in venv.env().items() if not k.startswith(cleared)}
    return {**env, **extra}


def _orders_keys(client: redis.Redis) -> list[bytes]:
    """The runtime's keys naming ``orders`` (``ls:``, docs/redis-layout.md): the web side's
    own (``lockstep-web:``, e.g. a live page's push counter) may name it too."""
    return sorted(client.scan_iter(match="ls:*orders*", count=1000))


def _latest_lags(client: redis.Redis) -> dict[int, int]:
    """The lag of each queue of the group in its newest ``lag_sampled`` sample (written by
    the dashboard's periodic task: batches of samples, one per queue, docs/events.md §2)."""
    latest: dict[int, int] = {}
    for event in read_all_events(client):
        if (event["type"], event["topic"], event["group"]) == ("lag_sampled", TOPIC, GROUP):
            for sample in event["details"]["samples"]:
                latest[sample["queue"]] = sample["lag"]
    return latest


def _queue_lags(body: bytes) -> dict[int, int]:
    view = json.loads(body)
    return {q["queue"]: q["lag"] for q in view["queues"]}


def test_it_serves_a_groups_lag_with_no_demo_and_its_tasks_on_their_own_queue(
    install_venv: InstallVenv, tmp_path: Path
) -> None:
    venv = install_venv(extras=("dashboard",))
    workdir, data = tmp_path / "workdir", tmp_path / "data"
    workdir.mkdir()
    with redis_server() as url, shop_worker(venv, tmp_path, url) as (shop, shop_env):
        client = redis.Redis.from_url(url)
        # The system's own topics: one the dashboard is to show, and an `orders` the demo
        # would consume.
        create_topic(url, TOPIC, QUEUES)
        create_topic(url, "orders", 8)
        produce(url, "orders", [f"order-{n}" for n in range(20)])
        orders_before = _orders_keys(client)

        port = free_port()
        env = _service_env(
            venv,
            REDIS_URL=url,
            LOCKSTEP_DATA_DIR=str(data),
            LOCKSTEP_LAG_SAMPLE_SECONDS="1",
            HOME=str(tmp_path / "home"),
        )
        command = [str(venv.bin("lockstep")), "dashboard", "--port", str(port)]
        dashboard = Process(command, tmp_path / "dashboard.log", cwd=workdir, env=env)
        try:
            login_url = dashboard.wait_for(r"Lockstep dashboard: (\S+)")[1]
            assert login_url == f"http://127.0.0.1:{port}/login/"
            dashboard.wait_for(r"No user yet: create one with `lockstep manage createsuperuser`")

            user_env = {
                **env,
                "DJANGO_SUPERUSER_USERNAME": USER,
                "DJANGO_SUPERUSER_PASSWORD": PASSWORD,
                "DJANGO_SUPERUSER_EMAIL": "ops@example.com",
            }
            created = subprocess.run(
                [str(venv.bin("lockstep")), "manage", "createsuperuser", "--noinput"],
                cwd=workdir,
                env=user_env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert created.returncode == 0, created.stderr

            # The system's group consumes what is there, stops; more arrives behind it.
            handled = produce(url, TOPIC, [f"parcel-{n}" for n in range(40)])
            with running_consumer(url, TOPIC, GROUP) as (_, recorder):
                assert probe_until(recorder.count, lambda n: n == len(handled), 30) == 40
            behind = per_queue(produce(url, TOPIC, [f"parcel-{n}" for n in range(12)]))
            expected = {q: behind.get(q, 0) for q in range(QUEUES)}

            # Wait for the web server, then read the group's JSON view as the logged-in user.
            session = Session(f"http://127.0.0.1:{port}")
            probe_until(lambda: _answers(session), bool, timeout=60, interval=0.2)
            session.log_in(USER, PASSWORD)
            path = f"/api/v1/topics/{TOPIC}/groups/{GROUP}"
            status, body = probe_until(
                lambda: session.get(path),
                lambda answer: answer[0] == 200 and _queue_lags(answer[1]) == expected,
            )
            assert status == 200, body
            view = json.loads(body)
            assert (view["topic"], view["group"], view["queue_count"]) == (TOPIC, GROUP, QUEUES)
            assert _queue_lags(body) == expected
            assert view["totals"]["lag"] == 12
            # The pages' CSS is served by the same server, debug off (the default).
            css_status, css = session.get("/static/lockstep.css")
            assert (css_status, len(css) > 0) == (200, True)

            # The dashboard's worker runs beat's periodic tasks: lag samples of the group.
            samples = probe_until(
                lambda: _latest_lags(client), lambda lags: lags == expected, timeout=60
            )
            assert samples == expected

            # No demo: the worker started no subscription, nobody consumes `orders`.
            dashboard.wait_for(r"worker +\| .*lockstep: no subscriptions configured")
            assert "subscription(s)" not in dashboard.output()
            groups = {s["group"] for c in consumers(client) for s in c["subscriptions"]}
            assert groups <= {GROUP}  # the test's own consumer may still be listed
            demo_keys = [
                k for k in client.scan_iter(count=1000) if re.search(rb"mailer|billing", k)
            ]
            assert demo_keys == []
            assert _orders_keys(client) == orders_before

            # The foreign worker received none of the dashboard's tasks and still runs its own.
            _run_a_shop_task(venv, tmp_path / "shop-code", shop_env, tmp_path / "last-task.done")
            assert "Received unregistered task" not in shop.output()
            assert "lockstep.dashboard" not in shop.output()
            assert client.llen("celery") == 0
        finally:
            exit_status = dashboard.stop()
        log = dashboard.output()
        assert exit_status == 0, log[-4000:]
        assert "Traceback" not in log, log
        for role in ("web", "ingester", "alerts", "worker", "beat"):
            assert re.search(rf"system +\| {role} stopped \(rc=0\)", log), log[-4000:]
        assert list(workdir.iterdir()) == []  # nothing written where it was started
        assert (data / "db.sqlite3").is_file()


def _answers(session: Session) -> bool:
    try:
        return session.get("/login/")[0] == 200
    except (urllib.error.URLError, ConnectionError):
        return False
