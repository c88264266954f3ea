"""The overview of a fleet of 4,096 (topic, group, queue) pairs in headless Chromium,
against daphne and the ingester as subprocesses: the page shows a summary and one page of
rows, sorts and filters through links that keep the view, and a change to a queue on
screen reaches the open page over its socket without a reload, in messages of at most
64 KiB."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from playwright.sync_api import Browser, Page, WebSocket

from lockstep.workers.refs import QueueRef
from tests.dashboard.fleets import make_fleet, set_max_offset
from tests.dashboard.stack import TIMEOUT_MS, Site, chromium, log_in, running_site

TOPICS = ["audit", "billing", "orders", "shipping"]
GROUPS = ["alpha", "beta"]
QUEUES = 512
LIMIT = 64 * 1024


def _max_offset(topic: str, queue: int) -> int:
    """Lag on one queue in 32 (the rest caught up), the most on orders' queue 64."""
    if queue % 32:
        return 0
    return 1000 if (topic, queue) == ("orders", 64) else queue // 32 + 1


@pytest.fixture(scope="module")
def site(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with running_site(redis_url, tmp_path_factory.mktemp("site"), {}) as site:
        client = redis.Redis.from_url(redis_url)
        make_fleet(client, TOPICS, QUEUES, GROUPS, _max_offset)
        client.close()
        yield site


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


@pytest.fixture
def page(browser: Browser, site: Site) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == [], "the page's script raised"


def _frames(page: Page) -> list[int]:
    """The size of every message the page's sockets receive."""
    sizes: list[int] = []

    def watch(socket: WebSocket) -> None:
        socket.on(
            "framereceived",
            lambda payload: sizes.append(
                len(payload.encode() if isinstance(payload, str) else payload)
            ),
        )

    page.on("websocket", watch)
    return sizes


def _wait_for_the_whole_fleet(page: Page) -> None:
    """The ingester's first sweep of the fleet is in the state the page reads."""
    page.wait_for_function(
        "document.querySelector('[data-total=queues]').textContent.replace(/,/g, '')"
        " === '4096 queue-groups'",
        timeout=120_000,
    )


def test_it_shows_a_summary_and_one_page_of_rows_sorted_and_filtered_on_the_server(
    page: Page, site: Site
) -> None:
    log_in(page, site, "/")
    page.wait_for_selector("#live-status[data-state=live]")
    _wait_for_the_whole_fleet(page)

    assert page.locator("#summary-rows tr.summary-row").count() == len(TOPICS) * len(GROUPS)
    assert page.locator("#queue-rows tr.queue-row").count() == 50
    assert page.inner_text("#page-info").startswith("page 1 of 82")

    page.click("a.sort[data-sort=lag]")
    page.wait_for_url("**sort=lag**")
    first = page.locator("#queue-rows tr.queue-row").first
    assert (first.get_attribute("data-topic"), first.get_attribute("data-queue")) == (
        "orders",
        "64",
    )
    page.select_option("#table-filters select[name=topic]", "billing")
    page.click("#table-filters button[type=submit]")
    page.wait_for_url("**topic=billing**")
    topics = page.eval_on_selector_all(
        "#queue-rows tr.queue-row", "rows => rows.map(r => r.dataset.topic)"
    )
    assert set(topics) == {"billing"} and len(topics) == 50
    assert "sort=lag" in page.url  # the filter kept the sort
    assert page.locator("#worst-rows tr.worst-row").first.get_attribute("data-queue") == "64"


def test_a_change_to_a_queue_on_screen_arrives_over_the_socket_in_small_messages(
    page: Page, site: Site, redis_url: str
) -> None:
    sizes = _frames(page)
    log_in(page, site, "/?topic=shipping&group=beta&per_page=100")
    page.wait_for_selector("#live-status[data-state=live]")
    _wait_for_the_whole_fleet(page)
    cell = '#queue-rows tr[data-topic="shipping"][data-group="beta"][data-queue="5"] .max-offset'
    assert page.get_attribute(cell, "data-value") == "0"

    client = redis.Redis.from_url(redis_url)
    set_max_offset(client, QueueRef("shipping", 5), 4242)
    client.close()

    page.wait_for_function(
        f"document.querySelector('{cell}').dataset.value === '4242'", timeout=60_000
    )
    assert page.evaluate("document.getElementById('overview').dataset.resyncs") is None
    assert sizes and max(sizes) <= LIMIT
