"""Bulk replay on the real stack: 500 dead letters over 50 keys, submitted through the API
(daphne), run by a real Celery worker process at a rate limit. It keeps each key's
original order in the queue streams, reports progress, and a cancel midway leaves the
rest dead in Redis and ``dead`` in the database; a second request replays the rest, still
in order; the audit log records each request's outcomes."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.dashboard.deadletters.action_helpers import (
    GROUP,
    dead_letters_in_redis,
    fill,
    original_offsets_by_key,
    replayed_messages,
)
from tests.dashboard.stack import PASSWORD, REPO, USER
from tests.dashboard.web_processes import WebSide

# A Celery worker process and 500 replays: seconds.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TOTAL, KEYS = 500, 50
RATE = 100  # a second: the 500 take 5 s, time enough to cancel midway
CANCEL_AFTER = 150


class Browser:
    """A logged-in session of the API over HTTP, as the page's script uses it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.jar = CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def log_in(self, user: str, password: str) -> None:
        form = self.opener.open(f"{self.url}/login/", timeout=10).read().decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
        assert token is not None
        data = urllib.parse.urlencode(
            {"username": user, "password": password, "csrfmiddlewaretoken": token.group(1)}
        ).encode()
        self.opener.open(f"{self.url}/login/", data=data, timeout=10)
        assert "sessionid" in {c.name for c in self.jar}

    def get(self, path: str) -> Any:
        return self._call(urllib.request.Request(f"{self.url}{path}"))[1]

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        csrf = next(c.value for c in self.jar if c.name == "csrftoken")
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "X-CSRFToken": csrf or ""},
            method="POST",
        )
        return self._call(request)

    def _call(self, request: urllib.request.Request) -> tuple[int, Any]:
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())


@pytest.fixture
def site(redis_url: str, redis_client: redis.Redis, tmp_path: Path) -> Iterator[WebSide]:
    """Migrated database with the demo admin, 500 dead letters synced into it, daphne
    and a Celery worker (no consumers: nothing handles the replays, so the streams show
    exactly what was re-published)."""
    web = WebSide(redis_url, tmp_path, DEMO_ADMIN_USER=USER, DEMO_ADMIN_PASSWORD=PASSWORD)
    web.migrate()
    web.manage("bootstrap_demo")
    web.start("web")
    worker = _start_worker(web, tmp_path)
    try:
        yield web
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(10)
        web.stop_all()


def _start_worker(web: WebSide, tmp_path: Path) -> subprocess.Popen[bytes]:
    env = {**web.env, "LOCKSTEP_SUBSCRIPTIONS": "[]", "LOCKSTEP_REPLAY_RATE_PER_S": str(RATE)}
    log_path = tmp_path / "celery.log"
    with open(log_path, "ab") as log:
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "lockstep.dashboard.celery",
                "worker",
                "--pool",
                "solo",
                "--without-mingle",
                "--without-gossip",
                "--loglevel",
                "INFO",
                "-n",
                f"dlq-bulk-{web.port}@%h",
            ],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while "ready." not in log_path.read_text(errors="replace"):
        if worker.poll() is not None or time.monotonic() > deadline:
            worker.kill()
            raise RuntimeError(f"celery worker did not start:\n{log_path.read_text()}")
        time.sleep(0.05)
    return worker


def _statuses(web: WebSide) -> dict[str, int]:
    return {
        str(status): int(str(n))
        for status, n in web.query(
            "SELECT status, COUNT(*) FROM deadletters_deadletter GROUP BY status"
        )
    }


def _until_finished(browser: Browser, status_url: str, seen: list[int]) -> Any:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = browser.get(status_url)
        seen.append(state["done"])
        if state["finished_at"] is not None:
            return state
        time.sleep(0.1)
    raise AssertionError(f"the request did not finish: {state}")


def test_it_replays_500_in_order_shows_progress_and_a_cancel_leaves_the_rest_dead(
    site: WebSide, redis_client: redis.Redis
) -> None:
    offsets = fill(redis_client, keys_count=KEYS, per_key=TOTAL // KEYS)
    synced = json.loads(site.manage("dlq", "list", "--group", GROUP, "--limit", "1", "--json"))
    browser = Browser(site.url)
    browser.log_in(USER, PASSWORD)
    actions = f"/api/v1/groups/{GROUP}/dead-letters/actions"

    code, submitted = browser.post(
        actions, {"action": "replay", "request_id": "bulk-replay-1", "filter": {}}
    )
    seen: list[int] = []
    deadline = time.monotonic() + 60
    while (state := browser.get(submitted["status_url"]))["done"] < CANCEL_AFTER:
        assert time.monotonic() < deadline, f"the request never reached {CANCEL_AFTER}: {state}"
        seen.append(state["done"])
        time.sleep(0.05)
    cancel_code, _ = browser.post(f"{submitted['status_url']}/cancel", {})
    first = _until_finished(browser, submitted["status_url"], seen)
    replayed_first = first["outcomes"].get("republished", 0)
    in_redis = (len(replayed_messages(redis_client)), dead_letters_in_redis(redis_client))
    in_db = _statuses(site)

    code2, rest = browser.post(
        actions, {"action": "replay", "request_id": "bulk-replay-2", "filter": {"status": "dead"}}
    )
    second = _until_finished(browser, rest["status_url"], [])
    audit = browser.get(f"/api/v1/audit?group={GROUP}")["entries"]

    assert synced["count_waiting"] == TOTAL
    # Ran in the worker: the API answered before the replays were done.
    assert (code, submitted["total"]) == (202, TOTAL)
    assert submitted["state"] in ("pending", "running") and submitted["done"] < TOTAL
    assert submitted["socket_path"] == "/ws/dead-letters/requests/bulk-replay-1/"
    assert cancel_code == 200
    assert seen == sorted(seen)
    assert any(0 < done < TOTAL for done in seen), seen
    assert first["state"] == "cancelled"
    assert CANCEL_AFTER <= replayed_first < TOTAL
    assert first["outcomes"] == {"republished": replayed_first, "skipped": TOTAL - replayed_first}
    assert in_redis == (replayed_first, TOTAL - replayed_first)
    assert in_db == {"replayed": replayed_first, "dead": TOTAL - replayed_first}

    assert (code2, rest["total"]) == (202, TOTAL - replayed_first)
    assert (second["state"], second["outcomes"]) == (
        "done",
        {"republished": TOTAL - replayed_first},
    )
    assert dead_letters_in_redis(redis_client) == 0
    assert _statuses(site) == {"replayed": TOTAL}
    messages = replayed_messages(redis_client)
    assert len(messages) == TOTAL
    assert {m.headers["lockstep-replay-id"] for m in messages} == {
        "bulk-replay-1",
        "bulk-replay-2",
    }
    # Per key, across both requests: every original offset once, in ascending order.
    assert original_offsets_by_key(messages) == offsets

    # The cancel's own entry and the first request's final one are written by two
    # processes at about the same time: match them by what they are, not by position.
    entries = {(e["action"], e["request_id"]): e for e in audit}
    assert len(audit) == len(entries) == 3
    second_entry = entries[("replay", "bulk-replay-2")]
    assert (second_entry["count"], second_entry["outcomes"]) == (
        TOTAL - replayed_first,
        second["outcomes"],
    )
    first_entry = entries[("replay", "bulk-replay-1")]
    assert (first_entry["count"], first_entry["outcomes"]) == (TOTAL, first["outcomes"])
    assert first_entry["actor"] == USER and first_entry["filter"] == {}
    cancel_entry = entries[("cancel_replay", "bulk-replay-1")]
    assert cancel_entry["outcomes"] == {}
    assert TOTAL - replayed_first <= cancel_entry["count"] <= TOTAL - CANCEL_AFTER
