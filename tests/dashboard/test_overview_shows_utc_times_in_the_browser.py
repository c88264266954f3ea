"""The overview in a real browser whose time zone is not UTC (America/New_York), for a user
who never chose a zone: the time it was last updated is shown in UTC (the default zone,
not the browser's), 24-hour, with the UTC time in its hover title, as every time is."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from playwright.sync_api import Page

from tests.dashboard.stack import TIMEOUT_MS, Site, chromium, log_in, running_site

SHOWN = re.compile(r"^updated \d{4}-\d\d-\d\d (\d\d):(\d\d):(\d\d)$")


@pytest.fixture(scope="module")
def site(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with running_site(redis_url, tmp_path_factory.mktemp("site"), {"orders": 2}) as site:
        yield site


@pytest.fixture
def page(site: Site) -> Iterator[Page]:
    with chromium() as browser:
        context = browser.new_context(timezone_id="America/New_York")
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        log_in(page, site, "/")
        yield page
        context.close()


def _seconds_of_day(moment: datetime) -> int:
    return moment.hour * 3600 + moment.minute * 60 + moment.second


def test_it_shows_when_it_was_updated_in_utc(page: Page) -> None:
    # A socket update re-renders the time after the server's first paint.
    page.wait_for_selector("#live-status[data-state=live]")
    page.wait_for_function("Number(document.getElementById('overview').dataset.seq) >= 0")

    shown = (page.text_content("#updated-at") or "").strip()
    title = page.get_attribute("#updated-at time", "title") or ""
    local_hour = int(page.evaluate("new Date().getHours()"))

    match = SHOWN.match(shown)
    assert match, f"not a 24-hour date and time: {shown!r}"
    assert title == f"{shown.removeprefix('updated ')} UTC", "its title is not the same UTC time"
    assert page.get_attribute("body", "data-time-zone") == "UTC"
    hours, minutes, seconds = (int(g) for g in match.groups())
    now = datetime.now(UTC)
    gap = abs(_seconds_of_day(now) - (hours * 3600 + minutes * 60 + seconds))
    assert min(gap, 86_400 - gap) < 120, f"{shown!r} is not about {now:%H:%M:%S} UTC"
    assert local_hour != now.hour, "the browser really is in another time zone"
