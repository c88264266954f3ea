"""The overview page in a real browser against the real stack: daphne, the event ingester
(both as subprocesses, as ``bin/run`` starts them), a Redis, an in-process consumer and
headless Chromium. Numbers must change on screen without a reload; a lost message or a lost
connection must be healed by re-reading the JSON view.

Screenshots land in ``test-artifacts/`` at the repository root (stable names)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis
from playwright.sync_api import Browser, Page, Route, WebSocketRoute

from lockstep.workers import create_topic
from lockstep.workers.topics import groups_of, register_group
from tests.dashboard.helpers import produce, running_consumer
from tests.dashboard.stack import (
    ARTIFACTS,
    TIMEOUT_MS,
    Navigations,
    Site,
    chromium,
    log_in,
    running_site,
)
from tests.support import probe_until

ROOT = "document.getElementById('overview')"  # carries seq and why the page last re-read


@pytest.fixture(scope="module")
def site(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with running_site(redis_url, tmp_path_factory.mktemp("site"), {"orders": 8}) as site:
        yield site


@pytest.fixture(scope="module")
def consumer(site: Site, redis_url: str) -> Iterator[None]:
    """One consumer of group ``mailer``, registered before any page loads."""
    client = redis.Redis.from_url(redis_url)
    with running_consumer(redis_url, "orders", "mailer"):
        registered = probe_until(lambda: groups_of(client, "orders"), lambda g: g == ["mailer"])
        assert registered == ["mailer"]
        yield
    client.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


@pytest.fixture
def page(browser: Browser, site: Site, consumer: None) -> Iterator[Page]:
    """A page logged in through the login form, on the overview, with its socket live."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    log_in(page, site, "/", screenshot="login.png")
    page.wait_for_selector("#live-status[data-state=live]")
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == [], "the page's script raised"


def _row(queue: int, group: str = "mailer", topic: str = "orders") -> str:
    return f'tr.queue-row[data-topic="{topic}"][data-queue="{queue}"][data-group="{group}"]'


def _number(page: Page, selector: str) -> float:
    value = page.get_attribute(selector, "data-value")
    assert value is not None, f"{selector} has no data-value"
    return float(value)


def _wait_for_number_at_least(page: Page, selector: str, minimum: float) -> None:
    page.wait_for_function(
        "([sel, min]) => { const c = document.querySelector(sel);"
        " return c !== null && Number(c.dataset.value) >= min; }",
        arg=[selector, minimum],
    )


def test_it_moves_the_committed_offset_without_reloading_the_page(
    page: Page, site: Site, redis_url: str
) -> None:
    (probe,) = produce(redis_url, "orders", ["order-live"])
    committed = f"{_row(probe.queue)} td.committed"
    _wait_for_number_at_least(page, committed, probe.offset + 1)
    before = _number(page, committed)
    navigations = Navigations(page)

    produce(redis_url, "orders", ["order-live"] * 5)
    _wait_for_number_at_least(page, committed, before + 5)

    navigations.assert_none()
    assert _number(page, f"{_row(probe.queue)} td.max-offset") >= before + 5
    assert page.get_attribute(_row(probe.queue), "data-lag-level") in {"none", "low"}
    assert page.get_attribute("#live-status", "data-state") == "live"
    page.screenshot(path=str(ARTIFACTS / "overview-live.png"), full_page=True)


def test_it_renders_a_topic_created_after_the_page_loaded(
    page: Page, site: Site, redis_url: str
) -> None:
    navigations = Navigations(page)
    assert page.query_selector('tr.summary-row[data-topic="payments"]') is None
    client = redis.Redis.from_url(redis_url)

    create_topic(client, "payments", 2)
    # Nobody consumes "payments" yet: the summary names it, without a group.
    alone = page.wait_for_selector('tr.summary-row.no-group[data-topic="payments"]')
    assert alone is not None
    assert "2 queues, no consumer group yet" in (alone.text_content() or "")
    register_group(client, "payments", "settler")  # a group nobody consumes for
    client.close()
    sent = produce(redis_url, "payments", ["p-1", "p-2", "p-3"])

    # Its queues are rows of the table, with their max offsets.
    for queue in (0, 1):
        expected = sum(1 for r in sent if r.queue == queue)
        selector = f"{_row(queue, group='settler', topic='payments')} td.max-offset"
        page.wait_for_selector(selector)
        _wait_for_number_at_least(page, selector, expected)
        assert _number(page, selector) == expected
    page.wait_for_selector('tr.summary-row[data-topic="payments"][data-group="settler"]')
    assert page.query_selector('tr.summary-row.no-group[data-topic="payments"]') is None
    navigations.assert_none()
    page.screenshot(path=str(ARTIFACTS / "overview-new-topic.png"), full_page=True)


def test_it_colours_queue_rows_by_lag(page: Page, site: Site, redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    create_topic(client, "audit-log", 2)
    register_group(client, "audit-log", "auditor")  # a group nobody consumes for
    client.close()
    small, *_ = produce(redis_url, "audit-log", ["a-1"])
    big = produce(redis_url, "audit-log", ["a-4"] * 1000)
    assert small.queue != big[0].queue, "the keys were chosen to land on different queues"

    behind = f'{_row(big[0].queue, "auditor", "audit-log")}[data-lag-level="high"]'
    slightly = f'{_row(small.queue, "auditor", "audit-log")}[data-lag-level="low"]'
    page.wait_for_selector(behind)
    page.wait_for_selector(slightly)

    assert _number(page, f"{behind} td.lag") == 1000
    assert "lag-high" in (page.get_attribute(behind, "class") or "")
    summary = 'tr.summary-row[data-topic="audit-log"][data-group="auditor"]'
    page.wait_for_selector(summary)
    assert page.get_attribute(summary, "data-lag") == "1001"
    page.screenshot(path=str(ARTIFACTS / "overview-lag.png"), full_page=True)


def test_it_rereads_the_json_view_when_a_message_is_missing(
    page: Page, site: Site, redis_url: str
) -> None:
    drop = {"next": False}  # drop the next message the server sends, once
    dropped: list[str | bytes] = []

    def proxy(socket: WebSocketRoute) -> None:
        server = socket.connect_to_server()

        def forward(message: str | bytes) -> None:
            if drop["next"]:
                drop["next"] = False
                dropped.append(message)
                return
            socket.send(message)

        server.on_message(forward)

    page.route_web_socket("**/ws/overview/", proxy)
    page.reload()
    page.wait_for_selector("#live-status[data-state=live]")
    page.wait_for_function(f"Number({ROOT}.dataset.seq) >= 1")
    navigations = Navigations(page)

    drop["next"] = True
    (probe,) = produce(redis_url, "orders", ["order-lost"])

    # The message after the lost one is a gap: the page reads the JSON view.
    page.wait_for_function(f"{ROOT}.dataset.resyncReason === 'gap'")
    _wait_for_number_at_least(page, f"{_row(probe.queue)} td.max-offset", probe.offset + 1)
    assert len(dropped) == 1
    assert page.get_attribute("#live-status", "data-state") == "live"
    navigations.assert_none()


def test_it_keeps_moving_across_an_ingester_restart_without_a_gap(
    page: Page, site: Site, redis_url: str
) -> None:
    # The socket numbers its own messages: a new ingester's hints continue the sequence.
    page.wait_for_function(f"Number({ROOT}.dataset.seq) >= 1")
    navigations = Navigations(page)

    site.stop("ingester")
    seq_when_stopped = int(page.get_attribute("#overview", "data-seq") or 0)
    site.start("ingester")
    (probe,) = produce(redis_url, "orders", ["order-restart"])

    # The new ingester starts Django before its first push: seconds, more under load.
    page.wait_for_function(f"Number({ROOT}.dataset.seq) > {seq_when_stopped + 1}", timeout=60_000)
    _wait_for_number_at_least(page, f"{_row(probe.queue)} td.committed", probe.offset + 1)
    assert page.get_attribute("#overview", "data-resync-reason") != "gap"
    assert page.get_attribute("#live-status", "data-state") == "live"
    navigations.assert_none()


def test_a_gap_seen_while_a_reread_is_in_flight_is_read_again(page: Page) -> None:
    # That read may predate the lost update, so it cannot stand for the gap's own read.
    holding = True
    held: list[Route] = []

    def hold_reads(route: Route) -> None:
        if holding:
            held.append(route)
        else:
            route.continue_()

    sockets: list[WebSocketRoute] = []

    def proxy(socket: WebSocketRoute) -> None:
        socket.connect_to_server()  # the server's pushes still reach the page
        sockets.append(socket)

    page.route_web_socket("**/ws/overview/", proxy)
    page.reload()
    page.wait_for_selector("#live-status[data-state=live]")
    page.wait_for_function(f"Number({ROOT}.dataset.seq) > 1")
    (socket,) = sockets
    before = int(page.get_attribute("#overview", "data-resyncs") or 0)
    page.route("**/api/v1/overview*", hold_reads)

    far = 1_000_000
    socket.send(json.dumps({"type": "overview", "seq": far}))  # a gap: a read
    socket.send(json.dumps({"type": "overview", "seq": far + 5}))  # another
    # A real push after them (a gap too), so the one read in flight is all the old code
    # had: nothing after the release would make it read again.
    page.wait_for_function(f"Number({ROOT}.dataset.seq) < {far}")
    assert held, "the first gap's read should be in flight"
    holding = False
    for route in held:
        route.continue_()

    page.wait_for_function(f"Number({ROOT}.dataset.resyncs) >= {before + 2}")
    assert page.get_attribute("#overview", "data-resync-reason") == "gap"


def test_it_reconnects_and_catches_up_after_the_server_restarts(
    page: Page, site: Site, redis_url: str
) -> None:
    (probe,) = produce(redis_url, "orders", ["order-outage"])
    committed = f"{_row(probe.queue)} td.committed"
    _wait_for_number_at_least(page, committed, probe.offset + 1)
    navigations = Navigations(page)

    site.stop("web")
    page.wait_for_selector("#live-status[data-state=reconnecting]")
    page.screenshot(path=str(ARTIFACTS / "overview-reconnecting.png"), full_page=True)
    during = produce(redis_url, "orders", ["order-outage"] * 4)
    site.start("web")

    page.wait_for_selector("#live-status[data-state=live]")
    page.wait_for_function(f"{ROOT}.dataset.resyncReason === 'reconnect'")
    _wait_for_number_at_least(page, committed, during[-1].offset + 1)
    navigations.assert_none()


def test_it_says_signed_out_when_the_session_ended_while_away(page: Page, site: Site) -> None:
    navigations = Navigations(page)
    page.context.clear_cookies()

    site.stop("web")
    page.wait_for_selector("#live-status[data-state=reconnecting]")
    site.start("web")

    page.wait_for_selector("#live-status[data-state=signed-out]")
    link = page.get_attribute("#live-status a", "href")
    assert link == "/login/?next=/"
    navigations.assert_none()
