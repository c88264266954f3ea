"""The events page does not let the periodic samples (``lag_sampled``, ``key_state``,
``lanes``: written every few seconds for every queue) bury the events an operator reads:
it hides them unless its "periodic samples" box is ticked, and of the events that arrive
while it is open it tints only the others. The JSON feed still lists every type unless
asked (``periodic=hide``). Real stack (daphne, the ingester), headless Chromium at 1400
and 1024 px, light and dark."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
from playwright.sync_api import Browser, Page

from lockstep.workers import events as ev
from tests.dashboard.stack import ARTIFACTS, Site, chromium, log_in, running_site, tab
from tests.support import probe_until

PERIODIC = {ev.LAG_SAMPLED, ev.KEY_STATE, ev.LANES}
ROWS = "#event-rows tr.event-row"


@pytest.fixture(scope="module")
def site(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with running_site(redis_url, tmp_path_factory.mktemp("events"), {"orders": 2}) as site:
        yield site


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


def _append(redis_url: str, *types: str, key: str = "order-1") -> None:
    client = redis.Redis.from_url(redis_url)
    now_ms = int(time.time() * 1000)
    ev.append(
        client,
        [ev.Event(t, now_ms, "orders", "billing", 0, key=key, details={"n": 1}) for t in types],
    )
    client.close()


def _open(browser: Browser, site: Site, width: int, scheme: str, stored: str) -> Page:
    """A logged-in tab on the events page, opened once the ingester stored the last event
    appended (``stored``: its key and type as feed filters), so the page loads the events
    with its list, not as arrivals."""
    page = tab(browser, width, scheme)
    log_in(page, site, "/")
    api = f"{site.url}/api/v1/events?{stored}"
    assert probe_until(lambda: page.request.get(api).json()["events"], bool, timeout=60)
    page.goto(f"{site.url}/events")
    return page


def _rows(page: Page) -> list[tuple[str, str, bool]]:
    """(type, key, tinted) of each row shown, newest first."""
    return [
        (str(r[0]), str(r[1]), bool(r[2]))
        for r in page.eval_on_selector_all(
            ROWS,
            "rows => rows.map(r => [r.dataset.type, r.querySelectorAll('td')[5].textContent,"
            " r.classList.contains('fresh')])",
        )
    ]


def _wait_for_key(page: Page, key: str) -> None:
    page.wait_for_function(
        f"[...document.querySelectorAll('{ROWS}')]"
        f".some(r => r.querySelectorAll('td')[5].textContent === {key!r})"
    )


def test_periodic_samples_are_hidden_and_only_new_events_that_matter_are_tinted(
    browser: Browser, site: Site, redis_url: str
) -> None:
    _append(redis_url, ev.KEY_STATE, ev.LAG_SAMPLED, ev.LOCK_ACQUIRED, key="before")
    api = f"{site.url}/api/v1/events"
    page = _open(browser, site, 1400, "light", "key=before&type=lock_acquired")
    _wait_for_key(page, "before")
    first = _rows(page)

    _append(redis_url, ev.KEY_STATE, ev.LANES, ev.DEAD_LETTERED, key="arrived")
    _wait_for_key(page, "arrived")
    arrived = [r for r in _rows(page) if r[1] == "arrived"]

    page.check("#feed-filters input[name=periodic]")
    page.click("#feed-filters button[type=submit]")
    page.wait_for_function("location.search.includes('periodic=show')")
    page.wait_for_selector(f"{ROWS}[data-type=key_state]")
    _append(redis_url, ev.KEY_STATE, ev.CONSUME_FAILED, key="later")
    page.wait_for_function(
        f"document.querySelectorAll('{ROWS}[data-type=consume_failed]').length === 1"
        f" && document.querySelectorAll('{ROWS}[data-type=key_state]').length === 3"
    )
    later = {r[0]: r[2] for r in _rows(page) if r[1] == "later"}
    every = {e["type"] for e in page.request.get(api).json()["events"]}
    hidden = {e["type"] for e in page.request.get(f"{api}?periodic=hide").json()["events"]}
    page.context.close()

    assert first == [(ev.LOCK_ACQUIRED, "before", False)]  # the list as loaded: no tint
    assert arrived == [(ev.DEAD_LETTERED, "arrived", True)]
    assert later == {ev.CONSUME_FAILED: True, ev.KEY_STATE: False}
    assert every >= PERIODIC
    assert not PERIODIC & hidden and ev.DEAD_LETTERED in hidden


@pytest.mark.parametrize("width", [1400, 1024])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_page_says_what_it_hides(
    browser: Browser, site: Site, redis_url: str, width: int, scheme: str
) -> None:
    shot_key = f"shot-{width}-{scheme}"
    _append(redis_url, ev.KEY_STATE, ev.REPLAY_SUCCEEDED, key=shot_key)
    page = _open(browser, site, width, scheme, f"key={shot_key}&type=replay_succeeded")
    _wait_for_key(page, shot_key)
    meta = page.text_content(".feed-meta") or ""
    box = page.is_checked("#feed-filters input[name=periodic]")
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"events-page-{width}-{scheme}.png"
    page.screenshot(path=str(shot))
    print(f"screenshot: {shot}")
    types = {r[0] for r in _rows(page)}
    page.context.close()

    assert "periodic samples (lag_sampled, key_state, lanes) hidden" in meta
    assert not box
    assert not PERIODIC & types
